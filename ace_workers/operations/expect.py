"""What a person saw before a change (``expect``): required, so a change never lands on a state nobody saw.

A rollback or a label move applies only if the head, or the label, is still where the person
(or the script) saw it; each front end passes that. One that has no view of its own, as the
command line, reads it first and passes it, and so is checked the same way.
"""

from __future__ import annotations

from typing import Any

from .errors import ExpectRequiredError

__all__ = ["NOT_GIVEN", "required_expect"]


class _NotGiven:
    """No ``expect`` given: the change is refused (ExpectRequiredError)."""

    def __repr__(self) -> str:
        return "NOT_GIVEN"


NOT_GIVEN: Any = _NotGiven()


def required_expect(expect: Any, what: str) -> Any:
    """``expect`` as given; ExpectRequiredError naming ``what`` if it was not."""
    if expect is NOT_GIVEN:
        raise ExpectRequiredError(what)
    return expect
