"""The names of the fleet's tasks, as messages carry them (one place: senders and workers agree)."""

from __future__ import annotations

__all__ = ["ADMIT_TASK", "NIGHTLY_TASK", "RECONCILE_TASK", "RETENTION_TASK", "STEP_TASK"]

# Every step of every recipe runs as this one task (tasks.py); its message names the step.
STEP_TASK = "ace.step"
# A finishing step hands the sending of newly admitted samples to this task (admission.py).
ADMIT_TASK = "ace.admit"
# What beat sends every ACE_RECONCILE_INTERVAL_SECONDS (reconcile.py).
RECONCILE_TASK = "ace.reconcile"
# What beat sends for a skillbook's nightly run (ops/nightly.py).
NIGHTLY_TASK = "ace.nightly"
# What beat sends on ACE_NIGHTLY_SCHEDULE to trim records past their retention (store/retention.py).
RETENTION_TASK = "ace.retention"
