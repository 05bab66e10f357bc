"""docs/redaction.md: its Python example runs, and its table names every kind and the defaults."""

from __future__ import annotations

import pytest

from ace_workers.redaction import DEFAULT_KINDS, KINDS
from tests.support.docs import runnable_blocks, section_text

EXAMPLES = runnable_blocks("docs/redaction.md", "## Configuring it")


@pytest.mark.parametrize("code", EXAMPLES)
def test_the_example_runs(code: str) -> None:
    exec(compile(code, "docs/redaction.md", "exec"), {})


def test_the_table_names_every_kind_and_the_defaults() -> None:
    table = section_text("docs/redaction.md", "## What is redacted")
    rows = [line.split("|") for line in table.splitlines() if line.startswith("| `")]
    kinds = {kind.strip(" `"): cells[2].strip() for cells in rows for kind in cells[1].split(",")}

    assert set(KINDS) <= set(kinds)
    assert {kind for kind in KINDS if kinds[kind] == "yes"} == set(DEFAULT_KINDS)
