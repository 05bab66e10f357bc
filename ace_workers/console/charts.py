"""Plots as inline SVG, drawn on the server: no script, no library, nothing fetched from elsewhere.

A chart is a few series of (x, y) points, each point optionally with an interval
(drawn as an error bar: a Wilson interval, a range). Names and labels come from
Redis and are escaped. Every point carries a ``<title>``, which a browser shows
on hover, so the exact figure is one pointer away.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from markupsafe import Markup, escape

__all__ = ["NEARLY_SPENT", "PALETTE", "Series", "line_chart", "share_bar"]

PALETTE = ("#2f5fd0", "#d0632f", "#1f7a4a", "#8a3fc0", "#b3261e", "#0f8b8d")
# As wide as a card of the widest page (main is 1400 px at most): the chart fills its card at
# about its own size, its text neither blown up nor shrunk.
_WIDTH, _HEIGHT = 1080, 260
_LEFT, _RIGHT, _TOP, _BOTTOM = 56, 16, 28, 36
Place = Callable[[float, float], tuple[float, float]]  # data (x, y) -> SVG (x, y)


@dataclass(frozen=True)
class Series:
    """One line: its name, its points, and (optional, one per point) each point's interval."""

    name: str
    points: Sequence[tuple[float, float]]
    intervals: Sequence[tuple[float, float] | None] = field(default_factory=tuple)


def line_chart(
    series: Sequence[Series],
    *,
    title: str,
    x_label: str,
    y_label: str,
    y_range: tuple[float, float] | None = None,
    chart_id: str = "",
) -> Markup:
    """An SVG line chart of ``series``; a chart with no point says so instead of drawing empty axes."""
    points = [point for line in series for point in line.points]
    ident = f' id="{escape(chart_id)}"' if chart_id else ""
    if not points:
        return Markup(f'<p class="empty"{ident}>{escape(title)}: nothing to plot yet.</p>')
    xs = [x for x, _ in points]
    ys = [y for _, y in points] + [v for line in series for i in line.intervals if i for v in i]
    x_low, x_high = min(xs), max(xs)
    y_low, y_high = y_range if y_range else (min(0.0, min(ys)), max(ys))
    if x_high == x_low:
        x_low, x_high = x_low - 1, x_high + 1
    if y_high == y_low:
        y_high = y_low + 1

    def at(x: float, y: float) -> tuple[float, float]:
        px = _LEFT + (x - x_low) / (x_high - x_low) * (_WIDTH - _LEFT - _RIGHT)
        py = _HEIGHT - _BOTTOM - (y - y_low) / (y_high - y_low) * (_HEIGHT - _TOP - _BOTTOM)
        return round(px, 1), round(py, 1)

    parts = [
        f'<svg{ident} class="plot" viewBox="0 0 {_WIDTH} {_HEIGHT}" role="img" '
        f'aria-label="{escape(title)}" xmlns="http://www.w3.org/2000/svg">',
        f"<title>{escape(title)}</title>",
        f'<text x="{_LEFT}" y="16" font-size="13" font-weight="600">{escape(title)}</text>',
    ]
    parts += _axes(x_low, x_high, y_low, y_high, at, x_label, y_label)
    for number, line in enumerate(series):
        color = PALETTE[number % len(PALETTE)]
        placed = [at(x, y) for x, y in line.points]
        if len(placed) > 1:
            path = " ".join(f"{x},{y}" for x, y in placed)
            parts.append(f'<polyline fill="none" stroke="{color}" stroke-width="2" points="{path}"/>')
        for index, ((x, y), (px, py)) in enumerate(zip(line.points, placed, strict=True)):
            interval = line.intervals[index] if index < len(line.intervals) else None
            label = f"{line.name}: {_number(y)} at {_number(x)}"
            if interval:
                _, top = at(x, interval[1])
                _, bottom = at(x, interval[0])
                bar = f'x1="{px}" x2="{px}" y1="{top}" y2="{bottom}"'
                parts.append(f'<line {bar} stroke="{color}" stroke-width="1.5"/>')
                label += f" [{_number(interval[0])}, {_number(interval[1])}]"
            parts.append(
                f'<circle class="point" cx="{px}" cy="{py}" r="3.5" fill="{color}" '
                f'data-series="{escape(line.name)}" data-x="{x}" data-y="{y}">'
                f"<title>{escape(label)}</title></circle>"
            )
    parts += _legend(series)
    parts.append("</svg>")
    return Markup("".join(parts))


def _axes(
    x_low: float, x_high: float, y_low: float, y_high: float, at: Place, x_label: str, y_label: str
) -> list[str]:
    left, bottom = at(x_low, y_low)
    right, top = at(x_high, y_high)
    parts = [
        f'<line x1="{left}" x2="{right}" y1="{bottom}" y2="{bottom}" stroke="#9aa3b5"/>',
        f'<line x1="{left}" x2="{left}" y1="{top}" y2="{bottom}" stroke="#9aa3b5"/>',
    ]
    for step in range(5):
        value = y_low + (y_high - y_low) * step / 4
        _, y = at(x_low, value)
        parts.append(f'<line x1="{left}" x2="{right}" y1="{y}" y2="{y}" stroke="#eef0f5"/>')
        parts.append(
            f'<text x="{left - 6}" y="{y + 4}" font-size="11" text-anchor="end">{_number(value)}</text>'
        )
    for value in _x_ticks(x_low, x_high):
        x, _ = at(value, y_low)
        parts.append(
            f'<text x="{x}" y="{bottom + 16}" font-size="11" text-anchor="middle">{_number(value)}</text>'
        )
    parts.append(
        f'<text x="{(left + right) / 2}" y="{_HEIGHT - 4}" font-size="11" text-anchor="middle" '
        f'fill="#6b7385">{escape(x_label)}</text>'
    )
    parts.append(
        f'<text x="12" y="{(top + bottom) / 2}" font-size="11" text-anchor="middle" fill="#6b7385" '
        f'transform="rotate(-90 12 {(top + bottom) / 2})">{escape(y_label)}</text>'
    )
    return parts


def _x_ticks(low: float, high: float) -> list[float]:
    """Five evenly spaced ticks; whole numbers only when the axis is (versions), each once."""
    ticks = [low + (high - low) * step / 4 for step in range(5)]
    if float(low).is_integer() and float(high).is_integer():
        ticks = sorted({float(round(tick)) for tick in ticks})
    return ticks


def _legend(series: Sequence[Series]) -> list[str]:
    parts = []
    x = _WIDTH - _RIGHT
    for number, line in reversed(list(enumerate(series))):
        color = PALETTE[number % len(PALETTE)]
        x -= 14 + 7 * len(line.name)
        parts.append(f'<rect x="{x}" y="8" width="10" height="10" fill="{color}"/>')
        parts.append(f'<text x="{x + 14}" y="17" font-size="11">{escape(line.name)}</text>')
    return parts


def _number(value: float) -> str:
    """Short tick and tooltip figures: integers as such, the rest to three significant digits."""
    if float(value).is_integer() and abs(value) < 1e9:
        return str(int(value))
    return f"{value:.3g}"


# A budget share from this on is drawn as nearly spent, and from 1.0 on as spent.
NEARLY_SPENT = 0.8
_BAR_WIDTH, _BAR_HEIGHT = 120, 12


def share_bar(share: float | None, *, label: str = "") -> Markup:
    """A small horizontal bar of ``share`` (1.0: full), as inline SVG; None (no budget) draws no bar.

    Past 1.0 the bar stays full and turns red: the figure beside it says by how much.
    """
    if share is None:
        return Markup('<span class="dim">no budget</span>')
    filled = round(max(0.0, min(share, 1.0)) * _BAR_WIDTH, 1)
    level = "spent" if share >= 1.0 else "nearly" if share >= NEARLY_SPENT else "ok"
    color = {"spent": PALETTE[4], "nearly": PALETTE[1], "ok": PALETTE[2]}[level]
    title = f"{label}: {share:.0%}" if label else f"{share:.0%}"
    return Markup(
        f'<svg class="share-bar share-{level}" viewBox="0 0 {_BAR_WIDTH} {_BAR_HEIGHT}" '
        f'width="{_BAR_WIDTH}" height="{_BAR_HEIGHT}" role="img" aria-label="{escape(title)}" '
        f'data-share="{share:.4f}" xmlns="http://www.w3.org/2000/svg"><title>{escape(title)}</title>'
        f'<rect width="{_BAR_WIDTH}" height="{_BAR_HEIGHT}" rx="2" fill="#e6e9f0"/>'
        f'<rect width="{filled}" height="{_BAR_HEIGHT}" rx="2" fill="{color}"/></svg>'
    )
