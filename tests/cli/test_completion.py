"""Shell completion: installed for bash as the docs print it, then asked to complete, as bash asks it."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.docs import run_shell_example, runnable_blocks

(INSTALL,) = runnable_blocks("docs/getting-started.md", "## Shell completion", "sh")


def _complete(home: Path, *words: str) -> list[str]:
    """What the installed bash completion offers for the last of ``words``, as bash would ask it."""
    quoted = " ".join(f"'{word}'" for word in words)
    done = run_shell_example(
        "source ~/.bash_completions/ace-workers.sh\n"
        f"COMP_WORDS=(ace-workers {quoted}); COMP_CWORD={len(words)}\n"
        '_ace_workers_completion ace-workers\nprintf "%s\\n" "${COMPREPLY[@]}"',
        home,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


@pytest.mark.slow
def test_bash_completion_installs_as_the_docs_say_and_completes_commands_and_options(tmp_path: Path) -> None:
    installed = run_shell_example(INSTALL, tmp_path)  # bash runs it: completion for bash
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
    shown = run_shell_example(
        f"ace-workers --show-completion {shell}", tmp_path, _TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION="1"
    )
    assert shown.returncode == 0, shown.stderr
    assert marker in shown.stdout
    assert "_ACE_WORKERS_COMPLETE" in shown.stdout
