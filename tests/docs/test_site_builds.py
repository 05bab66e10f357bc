"""The documentation site builds with --strict: no broken link, anchor, reference or include."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.docs import ROOT


@pytest.mark.slow
def test_the_site_builds_strict_without_a_warning(tmp_path: Path) -> None:
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    built = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    said = built.stdout + built.stderr
    assert built.returncode == 0, said[-4000:]
    assert "WARNING" not in said, said[-4000:]
    assert (tmp_path / "site" / "reference" / "configuration" / "index.html").is_file()
