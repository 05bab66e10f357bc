"""Every error ace-workers raises itself, under one root.

Errors carry their context as attributes (which operation, which file, how
many attempts) so callers and logs can act on them without parsing messages.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .counts import counted

__all__ = [
    "AceError",
    "SettingsError",
    "InvalidSettingError",
    "MissingSettingError",
    "UnknownSettingError",
    "RetiredSettingError",
    "EmbeddingUnavailableError",
    "EmptySessionError",
    "ExternalAgentError",
    "MissingExecutableError",
    "NotARegularFileError",
    "UnknownOptionError",
    "InvalidConsolidationError",
    "InvalidUpdateError",
    "JsonNestingError",
    "LearningFailed",
    "LLMError",
    "LLMRequestRejected",
    "MissingFieldError",
    "RecursiveReflectorError",
    "SandboxUnavailableError",
    "RetriesExhausted",
    "SkillbookError",
    "MissingExtraError",
    "ModelUnavailableError",
    "SkillbookFormatError",
    "SkillStateError",
    "SkillTooLongError",
    "PinnedSkillError",
    "TracingSetupError",
    "UnknownSkillError",
    "UnknownTagError",
    "one_line",
]


def one_line(text: object) -> str:
    """``text`` on one line: every run of whitespace, newlines among them, as one space.

    An error's message may span lines (a provider's reply, a pydantic error); a log line,
    an error record and a listing show one.
    """
    return " ".join(str(text).split())


class AceError(Exception):
    """Root of every error raised by ace-workers."""


class SettingsError(AceError, ValueError):
    """Settings (of the workers, the MCP server, ...) are invalid."""


class InvalidSettingError(SettingsError):
    """A setting has a bad value; ``variable`` names its ``ACE_*`` environment variable."""

    def __init__(self, variable: str, value: object, reason: str) -> None:
        self.variable = variable
        self.value = value
        self.reason = reason
        super().__init__(f"{variable}={value!r}: {reason}")


class MissingSettingError(SettingsError):
    """What was asked needs a setting that is not set; ``variable`` names its environment variable."""

    def __init__(self, variable: str, message: str) -> None:
        self.variable = variable
        super().__init__(message)


class UnknownSettingError(SettingsError):
    """An ``ACE_*`` environment variable names no setting (usually a typo)."""

    def __init__(
        self,
        names: list[str],
        suggestions: dict[str, str | None],
        *,
        owner: str = "WorkerSettings",
        prefix: str = "ACE_",
    ) -> None:
        self.names = names
        self.suggestions = suggestions
        described = [
            f"{name} (did you mean {suggestions[name]}?)" if suggestions.get(name) else name for name in names
        ]
        super().__init__(
            f"unknown {'setting' if len(names) == 1 else 'settings'}: {', '.join(described)}; "
            f"every {prefix}* variable must name a {owner} field (listed in its docstring)"
        )


class RetiredSettingError(SettingsError):
    """An ``ACE_*`` variable that was a setting once is set; ``replacement`` says what does its job now."""

    def __init__(self, variable: str, replacement: str) -> None:
        self.variable = variable
        self.replacement = replacement
        super().__init__(f"{variable} is retired: {replacement}; unset {variable}")


class ModelUnavailableError(SettingsError):
    """A model cannot be called from here: litellm knows no provider for it, or its credentials are unset."""

    def __init__(self, model: str, reason: str, missing: tuple[str, ...] = ()) -> None:
        self.model = model
        self.reason = reason
        self.missing = missing
        super().__init__(f"model {model!r} {reason}")


class SkillbookError(AceError):
    """A skillbook operation could not be carried out."""


class UnknownSkillError(SkillbookError, LookupError):
    """No skill has the given id (in the named skillbook, when one is named)."""

    def __init__(self, skill_id: str, skillbook: str | None = None) -> None:
        self.skill_id = skill_id
        self.skillbook = skillbook
        where = f" in skillbook {skillbook!r}" if skillbook is not None else ""
        super().__init__(f"no skill with id {skill_id!r}{where}")


class SkillStateError(SkillbookError, ValueError):
    """A skill is in a state the operation cannot act on (removed, pinned); nothing was changed."""

    def __init__(self, skill_id: str, reason: str, skillbook: str | None = None) -> None:
        self.skill_id = skill_id
        self.reason = reason
        self.skillbook = skillbook
        where = f" of skillbook {skillbook!r}" if skillbook is not None else ""
        super().__init__(f"skill {skill_id!r}{where} {reason}")


class PinnedSkillError(SkillStateError):
    """A pinned skill was to be archived or removed: pinned skills stay until they are unpinned."""

    def __init__(self, skill_id: str, action: str, skillbook: str | None = None) -> None:
        self.action = action
        super().__init__(
            skill_id, f"is pinned, so it cannot be {action}; unpin it first (skillbook unpin)", skillbook
        )


class UnknownTagError(SkillbookError, ValueError):
    """A skill was to be tagged with a tag other than the known ones (helpful, harmful, neutral)."""

    def __init__(self, skill_id: str, tag: str, known: tuple[str, ...]) -> None:
        self.skill_id = skill_id
        self.tag = tag
        self.known = known
        super().__init__(f"tag must be one of {', '.join(known)}, got {tag!r}")


class InvalidUpdateError(SkillbookError, ValueError):
    """An update batch holds an operation that cannot be applied; nothing was applied."""

    def __init__(self, index: int, operation_type: str, reason: str) -> None:
        self.index = index
        self.operation_type = operation_type
        self.reason = reason
        super().__init__(
            f"operation #{index} ({operation_type or 'no type'}) is invalid: {reason}; "
            "no operation of the batch was applied"
        )


class InvalidConsolidationError(InvalidUpdateError):
    """A consolidation batch names a skill it cannot act on; nothing was applied."""

    def __init__(self, index: int, operation_type: str, skill_id: str, reason: str) -> None:
        self.skill_id = skill_id
        super().__init__(index, operation_type, reason)


class SkillbookFormatError(SkillbookError, ValueError):
    """A skillbook document (file or string) is not valid JSON of the expected shape."""

    def __init__(self, source: str, reason: str) -> None:
        self.source = source
        self.reason = reason
        super().__init__(f"{source}: {reason}")


class SkillTooLongError(SkillbookError, ValueError):
    """A skill's content, section or id is longer than core/skill_limits.py allows; not written."""

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(reason)


class JsonNestingError(AceError, ValueError):
    """A JSON document nests deeper than it may; refused before the parser recursed into it."""

    def __init__(self, limit: int, offset: int) -> None:
        self.limit = limit
        self.offset = offset
        super().__init__(f"JSON nested deeper than {limit} levels (at character {offset}); refused")


class MissingFieldError(AceError, ValueError):
    """A step found a context field it needs still unset (None) when it ran."""

    def __init__(self, step: str, field: str) -> None:
        self.step = step
        self.field = field
        super().__init__(
            f"{step} needs ctx.{field}, but it is None: no earlier step provided {field!r} "
            "and the runner did not set it (check the pipeline's steps and how contexts are built)"
        )


class UnknownOptionError(AceError, TypeError):
    """A runner was given options it does not take; nothing was built."""

    def __init__(self, where: str, names: list[str], accepted: list[str]) -> None:
        self.where = where
        self.names = names
        self.accepted = accepted
        parts = [f"{where} does not take {', '.join(repr(n) for n in names)}"]
        parts += [f"for {name}: {OPTION_HINTS[name]}" for name in names if name in OPTION_HINTS]
        parts.append(f"it takes {', '.join(accepted) or 'no options'}")
        super().__init__("; ".join(parts))


# Options the design names that only some runners take, with where to find them instead.
OPTION_HINTS = {
    "opik": (
        "only ACELiteLLM takes opik=True; with any other runner append "
        "OpikStep(project_name=...) from ace_workers.steps through extra_steps=[...]"
    ),
}


class TracingSetupError(AceError, RuntimeError):
    """Tracing was required but its client could not be created."""

    def __init__(self, backend: str, reason: str) -> None:
        self.backend = backend
        self.reason = reason
        super().__init__(f"{backend} tracing was asked for but its client cannot be used: {reason}")


class EmbeddingUnavailableError(AceError):
    """The embedding provider or model a deduplication setup names cannot be used here."""

    def __init__(self, provider: str, reason: str, extra: str | None = None) -> None:
        self.provider = provider
        self.reason = reason
        self.extra = extra
        hint = f"; install it with: pip install 'ace-workers[{extra}]'" if extra else ""
        super().__init__(f"embedding provider {provider!r}: {reason}{hint}")


class MissingExtraError(AceError, ImportError):
    """A feature needs an optional extra that is not installed."""

    def __init__(self, what: str, extra: str, missing: str) -> None:
        self.what = what
        self.extra = extra
        self.missing = missing
        super().__init__(
            f"{what} needs the optional extra {extra!r} ({missing} is not installed): "
            f"pip install 'ace-workers[{extra}]'"
        )


class MissingExecutableError(AceError, FileNotFoundError):
    """A feature runs a command-line program that is not installed (not on PATH)."""

    def __init__(self, what: str, executable: str, install: str) -> None:
        self.what = what
        self.executable = executable
        self.install = install
        super().__init__(f"{what} needs the {executable!r} executable, which is not on PATH: {install}")


class NotARegularFileError(AceError, OSError):
    """A path to write or read is a FIFO, a device, a socket or a folder, not a regular file."""

    def __init__(self, path: object, kind: str) -> None:
        self.path = path
        self.kind = kind
        super().__init__(f"{path} is {kind}, not a regular file")

    def __str__(self) -> str:
        # OSError's own __str__ would print the arguments as a tuple.
        return str(self.args[0])


class EmptySessionError(AceError, ValueError):
    """A recorded agent session holds no message to learn from."""

    def __init__(self, source: str, events: int, skipped: int) -> None:
        self.source = source
        self.events = events
        self.skipped = skipped
        super().__init__(
            f"{source}: the session holds no user or assistant message to learn from "
            f"({counted(events, 'event')}, {skipped} of them of a type not understood)"
        )


class LLMError(AceError):
    """An LLM call failed."""


class LLMRequestRejected(LLMError):
    """The provider refused the request (authentication, permission, not found, bad request): not retried."""

    def __init__(self, message: str, models: tuple[str, ...], last_error: BaseException | None) -> None:
        self.models = models
        self.last_error = last_error
        super().__init__(message)


class ExternalAgentError(LLMError):
    """An external agent program (such as the claude CLI) failed or printed no usable result."""

    def __init__(self, executable: str, reason: str, returncode: int | None = None, stderr: str = "") -> None:
        self.executable = executable
        self.reason = reason
        self.returncode = returncode
        self.stderr = stderr
        tail = f"; stderr: {stderr.strip()[-500:]}" if stderr.strip() else ""
        code = f" (exit code {returncode})" if returncode is not None else ""
        super().__init__(f"{executable}{code}: {reason}{tail}")


class RetriesExhausted(LLMError):
    """The LLM's output still failed validation after every allowed attempt."""

    def __init__(
        self,
        what: str,
        attempts: int,
        last_error: BaseException | None,
        last_completion: Any = None,
        usage: dict[str, int] | None = None,
    ) -> None:
        self.what = what
        self.attempts = attempts
        self.last_error = last_error
        self.last_completion = last_completion
        self.usage = usage or {}
        super().__init__(
            f"{what}: no valid output after {counted(attempts, 'attempt')}; last error: {last_error}"
        )


class RecursiveReflectorError(RetriesExhausted):
    """The Recursive Reflector reached no valid FINAL reflection within its iterations."""

    def __init__(
        self,
        iterations: int,
        last_error: str | None,
        rr_trace: Mapping[str, Any] | None = None,
        last_completion: Any = None,
    ) -> None:
        super().__init__("recursive reflector", iterations, None, last_completion)
        self.iterations = iterations
        self.last_error_message = last_error
        self.rr_trace: dict[str, Any] = dict(rr_trace or {})
        # The last error is the sandbox's or the validation's text, not an exception object.
        self.args = (
            f"recursive reflector: no valid FINAL reflection after {counted(iterations, 'iteration')}; "
            f"last error: {last_error or 'none (the code never called FINAL)'}",
        )


class LearningFailed(AceError):
    """Every sample of a learning run failed; ``first_cause`` is the first sample's error."""

    def __init__(self, count: int, first_cause: BaseException, failed_at: str | None = None) -> None:
        self.count = count
        self.first_cause = first_cause
        self.failed_at = failed_at
        where = f" at {failed_at}" if failed_at else ""
        cause = one_line(f"{type(first_cause).__name__}: {first_cause}")
        super().__init__(f"all {counted(count, 'sample')} failed; first error{where}: {cause}")


class SandboxUnavailableError(AceError, RuntimeError):
    """The Recursive Reflector's OS boundary cannot be set up here; ``missing`` says what is lacking."""

    def __init__(self, missing: str) -> None:
        self.missing = missing
        super().__init__(
            f"the Recursive Reflector's sandbox cannot be isolated here: {missing}; "
            "install bubblewrap and libseccomp (or set ACE_RR_UNSAFE_SANDBOX=1 to run it "
            "behind the in-process guards only)"
        )
