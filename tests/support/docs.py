"""The documentation's pages (README.md and docs/**/*.md): their sections, code blocks and images,
and running a block as a reader would.

A page is named by its path from the repository's root (``"README.md"``, ``"docs/fleet.md"``). A
fenced block whose language is ``python`` or ``sh`` is *runnable*: some test must run it. A test
takes the blocks it runs through ``runnable_blocks`` (or ``examples``) when its module is imported,
which records them; tests/docs/test_every_example_runs.py gathers every runnable block of every
page and fails naming any block no test took. A block that cannot run offline (an API key, a
browser agent, Docker, a fleet) or that shows output is fenced in another language: ``console``
for a shell session, ``py`` for Python, ``text``, ``yaml``, ``json``, ``jsonl``.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
# The languages whose blocks a test must run.
RUNNABLE = ("python", "sh")
# Other names of the runnable languages: a block fenced with one would look runnable and be run by
# no test, so the pages use none of them (``py`` is the pages' fence for Python that cannot run).
RUNNABLE_ALIASES = ("bash", "shell", "zsh", "python3", "py3")

_FENCE = re.compile(r"^```([\w+-]*)[^\n]*\n(.*?)^```[ \t]*$", re.S | re.M)
_HEADING = re.compile(r"^(#{1,6}) ", re.M)
_HEADING_LINE = re.compile(r"^#{1,6} .*$", re.M)

# (page, code) of every runnable block a test module has taken, as it was imported.
_TAKEN: set[tuple[str, str]] = set()


@dataclass(frozen=True)
class Block:
    """One fenced code block of a page: where it is and what it says."""

    page: str
    heading: str  # the heading line it sits under ("## Opik"), the page's title for none
    language: str
    code: str


def pages() -> list[str]:
    """Every page: README.md and the Markdown files under docs/, as paths from the root."""
    return ["README.md"] + [path.relative_to(ROOT).as_posix() for path in sorted(DOCS.rglob("*.md"))]


def page_text(page: str) -> str:
    """The text of ``page`` (a path from the repository's root)."""
    return (ROOT / page).read_text(encoding="utf-8")


def section_text(page: str, heading: str | None = None) -> str:
    """The part of ``page`` under ``heading`` (a whole line, e.g. ``"## On the fleet"``) up to the
    next heading of any level, or the whole page for None."""
    original = "\n" + page_text(page)  # so that the title, on the first line, is found as any heading
    if heading is None:
        return original[1:]
    text = _without_code(original)
    start = text.find(f"\n{heading}\n")
    assert start >= 0, f"{page} has no heading {heading!r}"
    following = _HEADING.search(text, start + len(heading) + 2)
    return original[start : following.start()] if following else original[start:]


def code_blocks(page: str, heading: str | None = None, language: str = "python") -> list[str]:
    """The code of each ```language block under ``heading`` of ``page`` (None: the whole page)."""
    return [code for lang, code in _FENCE.findall(section_text(page, heading)) if lang == language]


def runnable_blocks(page: str, heading: str | None = None, language: str = "python") -> list[str]:
    """``code_blocks`` for a test that runs every one of them: records each as run by a test.

    Call it where the module is imported (a constant, a parametrize list), so that the check that
    every runnable block is run sees it. Fails if there is no such block: a test that runs none
    would pass for a section that lost its example."""
    assert language in RUNNABLE, f"{language!r} blocks are not run; runnable: {RUNNABLE}"
    blocks = code_blocks(page, heading, language)
    assert blocks, f"{page} {heading or ''} has no {language} block"
    _TAKEN.update((page, code) for code in blocks)
    return blocks


def examples(*sections: tuple[str, str | None]) -> list[tuple[str, int, str]]:
    """``(where, number, code)`` for every python block of each ``(page, heading)``; each section
    must have one. ``where`` is ``"page heading"``, for test ids and messages."""
    found = []
    for page, heading in sections:
        where = f"{page} {heading}" if heading else page
        found += [(where, number, code) for number, code in enumerate(runnable_blocks(page, heading), 1)]
    return found


def taken_blocks() -> set[tuple[str, str]]:
    """(page, code) of the runnable blocks the test modules imported so far take."""
    return set(_TAKEN)


def every_block() -> list[Block]:
    """Every fenced code block of every page, in page order."""
    found = []
    for page in pages():
        text = page_text(page)
        heading = text.splitlines()[0] if text else ""
        position = 0
        for match in _FENCE.finditer(text):
            for line in _HEADING_LINE.findall(_without_code(text[position : match.start()])):
                heading = line
            position = match.end()
            found.append(Block(page, heading, match.group(1), match.group(2)))
    return found


def _without_code(text: str) -> str:
    """``text`` with every fenced block's lines blanked (same length), so a ``# comment`` in a
    block is never taken for a heading."""
    return _FENCE.sub(lambda match: re.sub(r"[^\n]", " ", match.group(0)), text)


def images(page: str) -> list[str]:
    """The targets of the Markdown images ``![alt](target)`` of ``page``, as written."""
    return re.findall(r"!\[[^\]]*\]\(([^)\s]+)\)", _without_code(page_text(page)))


def run_example(code: str, workdir: Path, **settings: str) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a fresh interpreter in ``workdir``, with no ACE_*, OTEL_* or OPIK_* settings
    but ``settings``, and this virtualenv's commands on PATH."""
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=workdir,
        env=_reader_environment(workdir, settings),
        capture_output=True,
        text=True,
        timeout=180,
    )


def run_shell_example(code: str, workdir: Path, **settings: str) -> subprocess.CompletedProcess[str]:
    """Run a ``sh`` block with bash in ``workdir``, stopping at the first failing command
    (``set -eo pipefail``), in the same environment as run_example."""
    return subprocess.run(
        ["bash", "-c", f"set -eo pipefail\n{code}"],
        cwd=workdir,
        env=_reader_environment(workdir, settings),
        capture_output=True,
        text=True,
        timeout=300,
    )


def _reader_environment(workdir: Path, settings: dict[str, str]) -> dict[str, str]:
    """A reader's environment: no ACE_*, OTEL_* or OPIK_* settings but ``settings``, this
    virtualenv's commands first on PATH, HOME in ``workdir``."""
    prefixes = ("ACE_", "OTEL_", "OPIK_")
    env = {name: value for name, value in os.environ.items() if not name.startswith(prefixes)}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["HOME"] = str(workdir)  # whatever an example keeps under ~ stays in the test's directory
    env.update(settings)
    return env
