"""Times as people read them: "3 min ago" on the page, the exact UTC time on hover.

``when`` is the Jinja filter every console page shows a time with; it takes what the data
holds (an ISO 8601 string, with or without microseconds or a zone, or seconds since the
epoch) and renders ``<time datetime=... title=...>``. The relative text is as of rendering:
the live pages reload themselves.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime

from markupsafe import Markup, escape

__all__ = ["humane_time", "parse_time", "relative_time"]

_MINUTE, _HOUR, _DAY = 60, 3600, 86400


def parse_time(value: object) -> datetime | None:
    """``value`` as an aware UTC datetime: ISO text (naive means UTC) or epoch seconds; None if neither."""
    if isinstance(value, datetime):
        moment = value
    elif isinstance(value, int | float) and not isinstance(value, bool):
        return datetime.fromtimestamp(value, UTC)
    elif isinstance(value, str) and value.strip():
        try:
            moment = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
        except ValueError:
            return None
    else:
        return None
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def relative_time(moment: datetime, now: float) -> str:
    """How long before (or after) ``now`` ``moment`` is, in words: "just now", "5 min ago", "in 2 h"."""
    seconds = now - moment.timestamp()
    span = abs(seconds)
    if span < 10:
        return "just now"
    if span < _MINUTE:
        amount = f"{span:.0f} s"
    elif span < _HOUR:
        amount = f"{span // _MINUTE:.0f} min"
    elif span < _DAY:
        amount = f"{span // _HOUR:.0f} h"
    elif span < 60 * _DAY:
        days = int(span // _DAY)
        amount = f"{days} day" if days == 1 else f"{days} days"
    else:
        return moment.strftime("%Y-%m-%d")
    return f"{amount} ago" if seconds >= 0 else f"in {amount}"


NO_TIME = "\u2013"  # an en dash, as the pages show a missing figure


def humane_time(value: object, empty: str = NO_TIME, *, now: float | None = None) -> Markup:
    """A ``<time>`` element: the relative time, the exact UTC time on hover; ``empty`` for no time.

    Text that is not a time is shown as it is (escaped), never dropped.
    """
    if value is None or value == "":
        return Markup('<span class="dim">{}</span>').format(empty)
    moment = parse_time(value)
    if moment is None:
        return escape(str(value))
    exact = moment.strftime("%Y-%m-%d %H:%M:%S UTC")
    relative = relative_time(moment, time.time() if now is None else now)
    return Markup('<time datetime="{}" title="{}">{}</time>').format(
        moment.strftime("%Y-%m-%dT%H:%M:%SZ"), exact, relative
    )
