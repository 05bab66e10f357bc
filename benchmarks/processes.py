"""What a benchmark reads of other processes from /proc: their CPU time."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

__all__ = ["cpu_seconds", "cpu_seconds_of"]


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a process so far (all its threads), from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def cpu_seconds_of(pids: Mapping[str, int]) -> dict[str, float]:
    """cpu_seconds of each named process."""
    return {name: cpu_seconds(pid) for name, pid in pids.items()}
