"""Counts in words: "1 skill", "2 skills", and the noun alone for a list shown after it."""

from __future__ import annotations

import pytest

from ace_workers.counts import counted, noun_for
from ace_workers.errors import RetriesExhausted


def test_one_is_singular_and_every_other_count_plural() -> None:
    assert [counted(n, "skill") for n in (0, 1, 2)] == ["0 skills", "1 skill", "2 skills"]


def test_an_irregular_plural_is_given() -> None:
    assert counted(3, "entry", "entries") == "3 entries"


def test_noun_for_is_the_noun_without_the_count() -> None:
    assert (noun_for(1, "field"), noun_for(2, "field")) == ("field", "fields")


@pytest.mark.parametrize("count", [0, 1, 2, 1234])
def test_the_errors_word_their_counts_as_counted_does(count: int) -> None:
    # counts.py sits below errors.py in the layers: the errors use it, not a copy of its wording.
    error = RetriesExhausted("reflector", count, None)
    assert f"no valid output after {counted(count, 'attempt')};" in str(error)
