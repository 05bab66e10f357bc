"""The redactor: replaces what its detectors find with placeholders numbered per trace.

One :class:`RedactionSession` covers one trace (with its sample and the roles' outputs about
it): the same address is ``<EMAIL_1>`` wherever it appears, another one ``<EMAIL_2>``, so the
Reflector can still tell that two steps wrote to the same person. Placeholders already in the
text (a trace redacted by the producer, met again by a worker) are never handed out again, so
redacting twice changes nothing.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from .detectors import Detector, Span, build_detectors, secret_key_pattern
from .spec import RedactionSpec, parse_redaction_spec

__all__ = ["PLACEHOLDER", "RedactionSession", "Redactor", "redact_keeping", "redactor_for"]

# Between the strings of one JSON value redacted as one text: no detector's match crosses it
# (none matches NUL), bar the PEM key's, which _within_parts cuts at it.
_SEPARATOR = "\n\x00\n"
# A placeholder as the redactor writes it: <KIND_N>.
PLACEHOLDER = re.compile(r"<([A-Z][A-Z0-9_]*?)_([1-9][0-9]*)>")


class RedactionSession:
    """The placeholders of one trace: equal values get the same one, new values the next number."""

    def __init__(
        self,
        detectors: list[Detector],
        *,
        secret_keys: re.Pattern[str] | None,
        reserved_later: Callable[[], str] | None = None,
    ) -> None:
        self._detectors = detectors
        # The text whose placeholders to reserve, read only once a placeholder is handed out: most
        # texts a worker reads again hold nothing new, and then it is never built.
        self._reserved_later = reserved_later
        # JSON object keys that say their value is a credential ({"api_key": "..."}); None: not looked at.
        self._secret_keys = secret_keys
        self._assigned: dict[tuple[str, str], str] = {}
        self._counts: dict[str, int] = {}

    def reserve(self, text: str) -> None:
        """Never hand out a placeholder ``text`` holds already (it was redacted before, maybe elsewhere)."""
        for match in PLACEHOLDER.finditer(text):
            kind, number = match.group(1), int(match.group(2))
            self._counts[kind] = max(self._counts.get(kind, 0), number)

    def placeholder(self, kind: str, key: str) -> str:
        """The placeholder of value ``key`` of ``kind``: the one it had in this trace, else the next."""
        if self._reserved_later is not None:
            reserved, self._reserved_later = self._reserved_later, None
            self.reserve(reserved())
        label = kind.upper()
        found = self._assigned.get((label, key))
        if found is None:
            number = self._counts.get(label, 0) + 1
            self._counts[label] = number
            found = self._assigned[(label, key)] = f"<{label}_{number}>"
        return found

    def text(self, text: str) -> str:
        """``text`` with every finding of every detector replaced, detector after detector."""
        for detector in self._detectors:
            # A placeholder already there stays (a password in a URL redacted before still looks like one).
            spans = [
                span for span in _disjoint(detector.find(text)) if not PLACEHOLDER.fullmatch(text, *span)
            ]
            if spans:
                text = self._replace(text, _within_parts(text, spans), detector)
        return text

    def texts(self, texts: list[str]) -> list[str]:
        """Each of ``texts`` redacted, as one text: each detector runs once, not once per string."""
        if len(texts) < 2:
            return [self.text(text) for text in texts]
        joined = _SEPARATOR.join(texts)
        if joined.count(_SEPARATOR) != len(texts) - 1:  # a string holds the separator itself
            return [self.text(text) for text in texts]
        return self.text(joined).split(_SEPARATOR)

    def _replace(self, text: str, spans: list[Span], detector: Detector) -> str:
        parts, last = [], 0
        for start, end in spans:
            parts += [text[last:start], self.placeholder(detector.kind, detector.key(text[start:end]))]
            last = end
        parts.append(text[last:])
        return "".join(parts)

    def json(self, value: Any) -> Any:
        """A JSON value with its strings redacted (object keys are kept); the same object when unchanged."""
        strings: list[str] = []
        self._collect(value, strings)
        redacted = self.texts(strings)
        if redacted == strings and not self._holds_secret_field(value):
            return value  # nothing found (a trace redacted before): not rebuilt
        return self._rebuild(value, iter(redacted))

    def _collect(self, value: Any, strings: list[str]) -> None:
        if isinstance(value, str):
            strings.append(value)
        elif isinstance(value, list):
            for item in value:
                self._collect(item, strings)
        elif isinstance(value, dict):
            for key, item in value.items():
                if not self._names_secret(key, item):
                    self._collect(item, strings)

    def _rebuild(self, value: Any, redacted: Iterator[str]) -> Any:
        """``value`` with its strings taken in turn from ``redacted``; the same object where unchanged."""
        if isinstance(value, str):
            new = next(redacted)
            return value if new == value else new
        if isinstance(value, list):
            items = [self._rebuild(item, redacted) for item in value]
            return value if all(new is old for new, old in zip(items, value, strict=True)) else items
        if isinstance(value, dict):
            changed = {key: self._rebuild_field(key, item, redacted) for key, item in value.items()}
            return value if all(changed[key] is item for key, item in value.items()) else changed
        return value

    def _holds_secret_field(self, value: Any) -> bool:
        """True when a dict in ``value`` has a credential-named field (whose value _collect skipped)."""
        if isinstance(value, list):
            return any(self._holds_secret_field(item) for item in value)
        if isinstance(value, dict):
            return any(
                self._names_secret(key, item) or self._holds_secret_field(item) for key, item in value.items()
            )
        return False

    def _rebuild_field(self, key: Any, value: Any, redacted: Iterator[str]) -> Any:
        if self._names_secret(key, value):
            return self.placeholder("secret", value)
        return self._rebuild(value, redacted)

    def _names_secret(self, key: Any, value: Any) -> bool:
        """True when ``key`` says its string ``value`` is a credential ({"api_key": "..."}): it goes whole."""
        return (
            self._secret_keys is not None
            and isinstance(value, str)
            and bool(value)
            and isinstance(key, str)
            and self._secret_keys.match(key) is not None
            and PLACEHOLDER.fullmatch(value) is None
        )


class Redactor:
    """Redacts text and JSON values as ``spec`` says; a session per trace keeps its placeholders stable."""

    def __init__(self, spec: RedactionSpec) -> None:
        self.spec = spec
        self._detectors = build_detectors(spec)
        self._secret_keys = secret_key_pattern() if "secret" in spec.kinds else None

    @property
    def off(self) -> bool:
        """True when this redactor changes nothing."""
        return self.spec.off

    def session(self, *reserved: str, reserved_later: Callable[[], str] | None = None) -> RedactionSession:
        """A session for one trace, handing out no placeholder that ``reserved`` texts hold already
        (nor the text ``reserved_later`` makes, called when the first placeholder is handed out)."""
        session = RedactionSession(
            self._detectors, secret_keys=self._secret_keys, reserved_later=reserved_later
        )
        for text in reserved:
            session.reserve(text)
        return session

    def text(self, text: str) -> str:
        """``text`` redacted in a session of its own."""
        return text if self.off else self.session(reserved_later=lambda: text).text(text)

    def json(self, value: Any) -> Any:
        """A JSON value (a trace) redacted in a session of its own, its kept paths as they were."""
        if self.off:
            return value
        session = self.session(reserved_later=lambda: json_text(value))
        return redact_keeping(self.spec.kept, value, session.json)


# Where a kept path's value waits while the rest is redacted: not a string, so nothing reads it.
_SET_ASIDE = None


def redact_keeping(paths: Iterable[tuple[str, ...]], value: Any, redact: Callable[[Any], Any]) -> Any:
    """``redact(value)`` with the values at ``paths`` (dotted from the top of a dict) left as sent.

    A kept path names a subject (``metadata.user_id``) that ``forget --subject`` must find as
    the producer sent it. ``value`` itself is returned when nothing else changed.
    """
    kept = [(path, found) for path in paths if (found := _at(value, path)) is not _MISSING]
    if not kept:
        return redact(value)
    stripped = value
    for path, _found in kept:
        stripped = _with(stripped, path, _SET_ASIDE)
    redacted = redact(stripped)
    if redacted is stripped:
        return value
    for path, found in kept:
        redacted = _with(redacted, path, found)
    return redacted


_MISSING = object()


def _at(value: Any, path: tuple[str, ...]) -> Any:
    for part in path:
        if not isinstance(value, dict) or part not in value:
            return _MISSING
        value = value[part]
    return value


def _with(value: dict[str, Any], path: tuple[str, ...], new: Any) -> dict[str, Any]:
    """A copy of ``value`` (copied along ``path`` only) with ``new`` at ``path``."""
    head, *rest = path
    return {**value, head: _with(value[head], tuple(rest), new) if rest else new}


def json_text(value: Any) -> str:
    """``value`` as JSON text, for finding the placeholders it holds (anything not JSON as its repr)."""
    try:
        return json.dumps(value, ensure_ascii=False, default=repr)
    except (TypeError, ValueError, RecursionError):
        return repr(value)


def _within_parts(text: str, spans: list[Span]) -> list[Span]:
    """``spans`` cut where they cross a separator of joined strings (a PEM key cut short runs on)."""
    if _SEPARATOR not in text:
        return spans
    cut: list[Span] = []
    for start, end in spans:
        while (found := text.find(_SEPARATOR, start, end)) != -1:
            if found > start:
                cut.append((start, found))
            start = found + len(_SEPARATOR)
        if end > start:
            cut.append((start, end))
    return cut


def _disjoint(spans: Iterable[Span]) -> list[Span]:
    """``spans`` sorted, each overlapping an earlier (or longer one at the same start) left out."""
    kept: list[Span] = []
    for start, end in sorted(spans, key=lambda span: (span[0], -span[1])):
        if end > start and (not kept or start >= kept[-1][1]):
            kept.append((start, end))
    return kept


@functools.lru_cache(maxsize=64)
def redactor_for(text: str | None) -> Redactor:
    """The redactor of a spec's text (``ACE_REDACT``, a tenant's), built once per process and text."""
    return Redactor(parse_redaction_spec(text))
