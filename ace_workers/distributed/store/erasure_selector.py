"""What ``forget`` erases: a selector (a trace id, a sample id, a batch, or a subject) and its matching.

A selector is tested against what a producer sent: the trace (a JSON value) or the sample (its
question, context, metadata, id) of a step payload, an inbox entry or a claimed value. Once a
sample matched, every record naming it (its batch and index, its trace id, its sample id) goes
too: :class:`Matched` gathers those names as the scan finds them.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from .errors import InvalidSelectorError

__all__ = ["SELECTOR_KINDS", "Matched", "Selector", "names_in_source", "parse_subject", "traces_of"]

# The kinds of selector, as the CLI's options and the erasure record name them.
SELECTOR_KINDS = ("trace", "sample", "batch", "subject")
# Keys of a trace dict that name it, in order of preference (steps/provenance_source.py reads the same).
_TRACE_ID_KEYS = ("trace_id", "id")
# The deepest subject path taken: a crafted path cannot make a walk long.
_MAX_PATH = 16


@dataclass(frozen=True)
class Selector:
    """Which traces to forget: ``kind`` is one of SELECTOR_KINDS; a subject has a dotted ``path``."""

    kind: str
    value: str
    path: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.kind not in SELECTOR_KINDS:
            raise InvalidSelectorError(self.kind, f"the kind must be one of {', '.join(SELECTOR_KINDS)}")
        if not self.value.strip():
            raise InvalidSelectorError(self.describe(), "the value is empty")
        if self.kind == "subject" and (not self.path or not all(self.path) or len(self.path) > _MAX_PATH):
            raise InvalidSelectorError(self.describe(), "the subject needs a dotted PATH=VALUE")

    def describe(self) -> str:
        """The selector as a person wrote it: ``subject metadata.user_id=alice``, ``trace t-1``."""
        if self.kind == "subject":
            return f"subject {'.'.join(self.path)}={self.value}"
        return f"{self.kind} {self.value}"

    def to_dict(self) -> dict[str, str]:
        """The selector as the erasure record keeps it."""
        data = {"kind": self.kind, "value": self.value}
        if self.path:
            data["path"] = ".".join(self.path)
        return data

    def matches(self, trace: Any) -> bool:
        """True if ``trace`` (a trace or sample object as a producer sent it) is one this selects.

        A batch selector matches by where a sample is, never by its content: see :meth:`Matched.add`.
        """
        if not isinstance(trace, Mapping):
            return False
        if self.kind == "trace":
            return trace_id_of(trace) == self.value
        if self.kind == "sample":
            return _text(trace.get("id")) == self.value
        if self.kind == "subject":
            return _text(_resolve(trace, self.path)) == self.value
        return False


def parse_subject(text: str) -> Selector:
    """The subject selector of ``PATH=VALUE`` (``metadata.user_id=alice``); InvalidSelectorError if not so."""
    path, equals, value = text.partition("=")
    if not equals or not path.strip():
        raise InvalidSelectorError(text, "a subject is PATH=VALUE, e.g. metadata.user_id=alice")
    return Selector("subject", value, tuple(part.strip() for part in path.strip().split(".")))


def trace_id_of(trace: Mapping[str, Any]) -> str | None:
    """The producer's id of a trace: its ``trace_id``, else its ``id``."""
    for key in _TRACE_ID_KEYS:
        text = _text(trace.get(key))
        if text:
            return text
    return None


def _text(value: Any) -> str | None:
    """A scalar id or subject value as text; None for anything else (a dict, a list, a bool)."""
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        return None
    return str(value).strip()


def _resolve(value: Any, path: tuple[str, ...]) -> Any:
    for part in path:
        if not isinstance(value, Mapping):
            return None
        value = value.get(part)
    return value


def traces_of(payload: Any) -> Iterator[Mapping[str, Any]]:
    """The trace and the sample a step payload carries (claims resolved by the caller), as objects.

    A sample travels as ``{"type": "Sample", ...}`` or ``{"type": "dict", "value": {...}}``.
    """
    if not isinstance(payload, Mapping):
        return
    trace = payload.get("trace")
    if isinstance(trace, Mapping):
        yield trace
    sample = payload.get("sample")
    if isinstance(sample, Mapping):
        inner = sample.get("value") if sample.get("type") == "dict" else sample
        if isinstance(inner, Mapping):
            yield inner


@dataclass
class Matched:
    """The samples a selector matched so far: by (batch, index), by trace id and by sample id."""

    samples: set[tuple[str, int]] = field(default_factory=set)
    trace_ids: set[str] = field(default_factory=set)
    sample_ids: set[str] = field(default_factory=set)

    def add(self, batch_id: str | None, index: int | None, payload: Any) -> None:
        """Count the sample at (``batch_id``, ``index``) whose payload is ``payload`` as matched."""
        if batch_id and isinstance(index, int) and not isinstance(index, bool):
            self.samples.add((batch_id, index))
        for trace in traces_of(payload):
            trace_id = trace_id_of(trace)
            if trace_id:
                self.trace_ids.add(trace_id)
            sample_id = _text(trace.get("id"))
            if sample_id:
                self.sample_ids.add(sample_id)

    def names(self, source: Any) -> bool:
        """True if ``source`` (a provenance occurrence, a write's source) names a matched sample."""
        batch_id, index, trace_id, sample_id = names_in_source(source)
        if batch_id is not None and index is not None and (batch_id, index) in self.samples:
            return True
        return (trace_id is not None and trace_id in self.trace_ids) or (
            sample_id is not None and sample_id in self.sample_ids
        )

    def __bool__(self) -> bool:
        return bool(self.samples or self.trace_ids or self.sample_ids)


def names_in_source(source: Any) -> tuple[str | None, int | None, str | None, str | None]:
    """(batch id, sample index, trace id, sample id) a source names, each None where it does not.

    Occurrences say ``batch_id``/``sample_index``; a write scope's source ``batch``/``sample``.
    """
    if not isinstance(source, Mapping):
        return None, None, None, None
    batch_id = _text(source.get("batch_id", source.get("batch")))
    raw_index = source.get("sample_index", source.get("sample"))
    index = raw_index if isinstance(raw_index, int) and not isinstance(raw_index, bool) else None
    return batch_id, index, _text(source.get("trace_id")), _text(source.get("sample_id"))
