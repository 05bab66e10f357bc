"""``ace-workers hook claude-code``: Claude Code hands each finished session to ace-workers.

Registered as a Claude Code ``SessionEnd`` hook (``--print-config`` prints the
settings entry), the command reads the hook's JSON from stdin (``session_id``,
``transcript_path``, ...), turns the transcript into one trace here, and keeps
it in the skillbook's inbox for its nightly run. With ``--now`` the trace goes
to the running workers at once; when no worker serves the queues it is kept in
the inbox instead, so a session is never lost to a fleet that is down.

Claude Code reads a hook's exit code, and 2 blocks some events: every failure
here exits 1 (shown to the user, blocking nothing) with one line on stderr.
Claude Code may leave stdin open, so the input is read until one whole JSON
object has arrived, for at most ``--input-timeout`` seconds.

What the hook reads is bounded, since anything can write to its stdin: at most
MAX_HOOK_INPUT_BYTES of input (reading stops there), and a transcript only if,
its symlinks resolved, it is a regular file of at most MAX_TRANSCRIPT_BYTES
under the user's home (where Claude Code keeps transcripts, ``~/.claude/projects``)
or under the project directory (the working directory Claude Code runs hooks in).
A link to ``/etc/shadow``, a FIFO or a device is refused before it is opened.
"""

from __future__ import annotations

import codecs
import json
import os
import select
import shlex
import stat
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Annotated, Any

import typer

from ..core.json_nesting import check_json_depth
from ..distributed.producer.errors import HookInputError, NoWorkersError
from ..errors import AceError, JsonNestingError
from .help import HelpCommand, HelpGroup
from .options import check_skillbook_name, redis_settings
from .output import console, print_warning
from .service import open_service, require_workers
from .sessions import session_trace

__all__ = ["claude_code_hook_command", "hook_app", "read_hook_input", "session_end_hook_config"]

hook_app = typer.Typer(
    cls=HelpGroup, help="Hooks that agents call when a session ends.", no_args_is_help=True
)

# What Claude Code's settings call the event this hook is meant for.
HOOK_EVENT = "SessionEnd"
_CHUNK_BYTES = 65536
# The hook's JSON is a few hundred bytes; a megabyte leaves room for long paths and new fields.
MAX_HOOK_INPUT_BYTES = 1024 * 1024
# Long Claude Code sessions reach tens of MiB; the trace made of one is held in memory whole.
MAX_TRANSCRIPT_BYTES = 256 * 1024 * 1024


@hook_app.command("claude-code", cls=HelpCommand)
def claude_code_hook_command(
    skillbook: Annotated[str, typer.Option(help="Name of the skillbook in Redis.")] = "default",
    now: Annotated[
        bool,
        typer.Option(
            "--now", help="Send the session to the running workers now (kept in the inbox if none runs)."
        ),
    ] = False,
    input_timeout: Annotated[
        float, typer.Option(min=0.1, help="Seconds to wait for the hook input on stdin.")
    ] = 5.0,
    print_config: Annotated[
        bool,
        typer.Option(
            "--print-config", help="Print the ~/.claude/settings.json entry that registers this hook; exit."
        ),
    ] = False,
) -> None:
    """Learn from a finished Claude Code session: its transcript becomes a trace in the skillbook's inbox."""
    import redis  # the client loads when the hook runs, not for --help

    try:
        check_skillbook_name(skillbook, "--skillbook")
        if print_config:
            typer.echo(json.dumps(session_end_hook_config(skillbook, now=now), indent=2))
            return
        hook = read_hook_input(sys.stdin, input_timeout)
        _learn_from_session(hook, skillbook, now=now)
    except (AceError, typer.BadParameter, OSError, redis.RedisError) as exc:
        message = exc.format_message() if isinstance(exc, typer.BadParameter) else str(exc)
        typer.echo(f"ace-workers hook claude-code: {message}", err=True)
        raise typer.Exit(1) from None


def session_end_hook_config(skillbook: str, *, now: bool = False) -> dict[str, Any]:
    """The Claude Code settings that run this hook when a session ends."""
    command = f"ace-workers hook claude-code --skillbook {shlex.quote(skillbook)}" + (" --now" if now else "")
    return {"hooks": {HOOK_EVENT: [{"hooks": [{"type": "command", "command": command}]}]}}


def read_hook_input(stream: IO[str], timeout: float) -> dict[str, Any]:
    """The first JSON object on ``stream``, read until it is whole (the stream may stay open).

    Raises:
        HookInputError: nothing arrived within ``timeout`` seconds, it is not a JSON object, it
            nests too deeply (core/json_nesting.py), or more than MAX_HOOK_INPUT_BYTES arrived
            first (the rest is never read).
    """
    decoder = json.JSONDecoder()
    text = ""
    for chunk in _chunks(stream, time.monotonic() + timeout):
        text += chunk
        try:
            check_json_depth(text)  # the parser recurses per level: a deep prefix is refused now
        except JsonNestingError as exc:
            raise HookInputError(f"the hook input: {exc}") from None
        try:
            value, _ = decoder.raw_decode(text.lstrip())
        except json.JSONDecodeError:
            continue  # not whole yet
        if not isinstance(value, dict):
            raise HookInputError(f"the hook input is a JSON {type(value).__name__}, not an object")
        return value
    if not text.strip():
        raise HookInputError(
            f"no hook input on stdin within {timeout:g} s (a JSON object with transcript_path)"
        )
    raise HookInputError(f"the hook input is not JSON: {text.strip()[:80]!r}")


def _chunks(stream: IO[str], deadline: float) -> Iterator[str]:
    """Text from ``stream`` as it arrives, until end of file or ``deadline``; at most MAX_HOOK_INPUT_BYTES."""
    try:
        descriptor = stream.fileno()
    except (AttributeError, OSError, ValueError):  # not a real file (an in-memory stream)
        text = stream.read(MAX_HOOK_INPUT_BYTES + 1)
        _check_input_size(len(text.encode()))
        yield text
        return
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    received = 0
    while (remaining := deadline - time.monotonic()) > 0:
        ready, _, _ = select.select([descriptor], [], [], remaining)
        if not ready:
            return
        data = os.read(descriptor, _CHUNK_BYTES)
        if not data:
            return
        received += len(data)
        _check_input_size(received)
        yield decoder.decode(data)


def _check_input_size(received: int) -> None:
    if received > MAX_HOOK_INPUT_BYTES:
        raise HookInputError(
            f"the hook input is over {MAX_HOOK_INPUT_BYTES} bytes (a SessionEnd hook's is a few "
            "hundred); refused without reading the rest"
        )


def checked_transcript(transcript: str) -> Path:
    """The transcript's real path, if the hook may read it: the rule is the module docstring's.

    A regular file of at most MAX_TRANSCRIPT_BYTES under the user's home or the project
    directory (the working directory), checked once its symlinks are resolved.

    Raises:
        HookInputError: naming the path and the rule it breaks.
    """
    try:
        path = Path(transcript).expanduser().resolve(strict=True)
    except (OSError, RuntimeError):  # missing, a dangling link, a link loop
        raise HookInputError(f"transcript_path {transcript}: no such file") from None
    roots = [root for root in (Path.home().resolve(), Path.cwd().resolve()) if root != Path(root.anchor)]
    if not any(path.is_relative_to(root) for root in roots):
        where = " or ".join(str(root) for root in roots) or "(none: home and working directory are /)"
        raise HookInputError(
            f"transcript_path {transcript} is {path}, outside your home and the project directory "
            f"({where}); refused"
        )
    status = path.stat()
    if not stat.S_ISREG(status.st_mode):
        raise HookInputError(f"transcript_path {transcript} is not a regular file; refused")
    if status.st_size > MAX_TRANSCRIPT_BYTES:
        raise HookInputError(
            f"transcript_path {transcript} holds {status.st_size} bytes, over the {MAX_TRANSCRIPT_BYTES} "
            "a transcript may have; refused"
        )
    return path


def _learn_from_session(hook: dict[str, Any], skillbook: str, *, now: bool) -> None:
    """Convert the session the hook names and keep it in the inbox, or send it to the workers."""
    transcript = hook.get("transcript_path")
    if not isinstance(transcript, str) or not transcript:
        raise HookInputError(f"the hook input has no transcript_path (its keys: {', '.join(sorted(hook))})")
    path = checked_transcript(transcript)
    settings = redis_settings(
        "hook claude-code", "the trace goes to the skillbook's inbox in Redis", kept_embedded=False
    )
    trace = session_trace(path, "claude-code")
    if trace is None:
        return  # an empty session: session_trace said so, and there is nothing to learn
    session = hook.get("session_id")
    if isinstance(session, str) and session:
        trace["session_id"] = session
    with open_service(settings, run_workers=False, learn_threads=1) as service:
        if now:
            try:
                require_workers(service, "trace_analyser", skillbook)
            except NoWorkersError as exc:
                print_warning(f"{exc}; kept in the inbox instead")
            else:
                handle = service.producer.enqueue_traces([trace], skillbook)
                console.print(
                    f"session {trace['session_id']}: sent to the workers as batch {handle.batch_id} "
                    f"(skillbook {skillbook!r})",
                    markup=False,
                )
                return
        service.producer.append_to_inbox([trace], skillbook)
        console.print(
            f"session {trace['session_id']}: kept in the inbox of {skillbook!r} for its nightly run",
            markup=False,
        )
