"""How far back a skill's history is read, and what an occurrence's evidence can be.

Apart from provenance_reader.py, which reads them from Redis, so that ``skillbook why --help``
names the default without loading the store.
"""

from __future__ import annotations

__all__ = ["DEFAULT_SCAN", "EXPIRED", "FOUND", "NO_BATCH"]

DEFAULT_SCAN = 500  # change-log entries read, newest first: a bounded look back
# What an occurrence's evidence can be.
FOUND = "found"  # the sample's input, read from its batch's ledger
EXPIRED = "expired"  # the batch's records are gone (ACE_RESULT_TTL_SECONDS) or its trace's claim expired
NO_BATCH = "no batch"  # not learned on the fleet (in-process, by hand, by dedup)
