"""When beat sends the nightly runs: a crontab read in UTC, or a number of seconds (tests, demos)."""

from __future__ import annotations

from datetime import UTC, timedelta, tzinfo
from typing import TypeAlias

from celery.schedules import crontab

__all__ = ["NightlySchedule", "UtcCrontab", "parse_schedule"]


class UtcCrontab(crontab):  # type: ignore[misc]  # Celery ships no types
    """A crontab read in UTC whatever timezone the Celery app is configured with.

    A plain crontab takes the app's timezone, so an app set to another one would
    move the nightly run away from the UTC time ACE_NIGHTLY_SCHEDULE documents.
    """

    @property
    def tz(self) -> tzinfo:
        """Always UTC."""
        return UTC


# A beat entry's schedule: a crontab, or an interval.
NightlySchedule: TypeAlias = crontab | timedelta


def parse_schedule(text: str) -> NightlySchedule:
    """A nightly schedule: a 5-field crontab in UTC, or a number of seconds (for tests and demos)."""
    try:
        return timedelta(seconds=float(text))
    except ValueError:
        minute, hour, day_of_month, month_of_year, day_of_week = text.split()
        return UtcCrontab(
            minute=minute,
            hour=hour,
            day_of_month=day_of_month,
            month_of_year=month_of_year,
            day_of_week=day_of_week,
        )
