"""Counts in words: "1 skill", "2 skills", and the noun alone for a list shown after it."""

from __future__ import annotations

import pytest

from ace_workers.core.counts import counted, noun_for
from ace_workers.errors import _counted


def test_one_is_singular_and_every_other_count_plural() -> None:
    assert [counted(n, "skill") for n in (0, 1, 2)] == ["0 skills", "1 skill", "2 skills"]


def test_an_irregular_plural_is_given() -> None:
    assert counted(3, "entry", "entries") == "3 entries"


def test_noun_for_is_the_noun_without_the_count() -> None:
    assert (noun_for(1, "field"), noun_for(2, "field")) == ("field", "fields")


@pytest.mark.parametrize("count", [0, 1, 2, 1234])
def test_the_errors_module_words_counts_as_counted_does(count: int) -> None:
    # errors.py sits below core in the layers, so it keeps its own copy of the wording.
    assert _counted(count, "attempt") == counted(count, "attempt")
