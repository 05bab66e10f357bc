"""Shell completion: installed for bash as a user would, then asked to complete, as bash asks it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest


def _shell_env(home: Path, **extra: str) -> dict[str, str]:
    """A user's environment: HOME in the test's folder, this virtualenv's commands first on PATH."""
    env = {name: value for name, value in os.environ.items() if not name.startswith(("ACE_", "_TYPER"))}
    env["HOME"] = str(home)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    return env | extra


def _bash(script: str, home: Path, **extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "-c", script], env=_shell_env(home, **extra), capture_output=True, text=True, timeout=60
    )


def _complete(home: Path, *words: str) -> list[str]:
    """What the installed bash completion offers for the last of ``words``, as bash would ask it."""
    quoted = " ".join(f"'{word}'" for word in words)
    done = _bash(
        'source "$(tail -n 1 ~/.bashrc | cut -d"\'" -f2)"\n'
        f"COMP_WORDS=(ace-workers {quoted}); COMP_CWORD={len(words)}\n"
        '_ace_workers_completion ace-workers\nprintf "%s\\n" "${COMPREPLY[@]}"',
        home,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


@pytest.mark.slow
def test_bash_completion_installs_and_completes_commands_subcommands_and_options(tmp_path: Path) -> None:
    installed = _bash("ace-workers --install-completion", tmp_path)
    assert installed.returncode == 0, installed.stderr
    assert "bash completion installed in" in installed.stdout
    assert "source '" in (tmp_path / ".bashrc").read_text()

    assert _complete(tmp_path, "skill") == ["skillbook"]
    assert "export" in _complete(tmp_path, "skillbook", "ex")
    assert "--json" in _complete(tmp_path, "status", "--")


@pytest.mark.parametrize(
    ("shell", "marker"),
    [("bash", "complete -o default"), ("zsh", "compdef"), ("fish", "complete --command ace-workers")],
)
def test_show_completion_prints_a_script_for_each_shell(shell: str, marker: str, tmp_path: Path) -> None:
    # Typer's own switch to name the shell instead of detecting the one the command runs under.
    shown = _bash(
        f"ace-workers --show-completion {shell}", tmp_path, _TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION="1"
    )
    assert shown.returncode == 0, shown.stderr
    assert marker in shown.stdout
    assert "_ACE_WORKERS_COMPLETE" in shown.stdout
