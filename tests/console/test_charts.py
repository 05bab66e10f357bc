"""charts.py: one point per figure, intervals as bars, hostile names escaped, whole-number axes kept whole."""

from __future__ import annotations

import re

from ace_workers.console.charts import Series, line_chart, share_bar


def test_every_point_is_drawn_once_with_its_figure_in_a_tooltip() -> None:
    svg = line_chart(
        [Series("prod", [(1, 0.5), (2, 0.75)]), Series("canary", [(2, 0.25)])],
        title="accuracy",
        x_label="version",
        y_label="accuracy",
    )
    assert svg.count('<circle class="point"') == 3
    assert "<title>prod: 0.75 at 2</title>" in svg
    assert svg.count("<polyline") == 1  # a one-point series has no line


def test_an_interval_becomes_a_bar_and_is_named_in_the_tooltip() -> None:
    svg = line_chart([Series("prod", [(1, 0.5)], [(0.25, 0.75)])], title="A/B", x_label="", y_label="")
    assert "[0.25, 0.75]" in svg
    assert 'stroke-width="1.5"' in svg


def test_names_from_redis_are_escaped() -> None:
    svg = line_chart(
        [Series("<script>alert(1)</script>", [(1, 1)])], title="<b>t</b>", x_label="x", y_label="y"
    )
    assert "<script>" not in svg
    assert "&lt;script&gt;" in svg
    assert "<b>" not in svg


def test_no_point_says_so_instead_of_drawing_empty_axes() -> None:
    assert "nothing to plot yet" in line_chart([Series("prod", [])], title="cost", x_label="", y_label="")


def test_a_whole_number_axis_gets_whole_number_ticks() -> None:
    svg = line_chart([Series("size", [(1, 3), (4, 9)])], title="skills", x_label="version", y_label="")
    ticks = re.findall(r'text-anchor="middle">([^<]+)</text>', svg)
    assert ticks == ["1", "2", "3", "4"]


def test_a_share_bar_fills_its_share_and_turns_red_once_spent() -> None:
    assert 'width="72.0"' in share_bar(0.6, label="tokens")
    assert "share-ok" in share_bar(0.6)
    assert "share-nearly" in share_bar(0.85)
    spent = share_bar(1.25, label="cost")
    assert "share-spent" in spent
    assert 'width="120.0"' in spent  # full, not past its frame: the figure beside it says 125%
    assert "<title>cost: 125%</title>" in spent


def test_a_share_bar_without_a_budget_draws_nothing_and_escapes_its_label() -> None:
    assert "<svg" not in share_bar(None)
    assert "no budget" in share_bar(None)
    assert "<b>" not in share_bar(0.5, label="<b>model</b>")
