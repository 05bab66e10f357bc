"""Redacting a step context: its trace, its sample and the roles' outputs, in one session.

What a prompt is built from: the trace (every string, at any depth), the sample's question,
context, ground truth and metadata, and the outputs of the roles before (the Reflector's analysis,
the SkillManager's operations, whose content becomes a skill's text). The context's own
``metadata`` is the pipeline's bookkeeping (batch, label, versions) and is left as it is.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from pydantic import BaseModel

from ..core.context import ACEStepContext
from .redactor import RedactionSession, Redactor, json_text, redact_keeping

__all__ = ["redact_context", "redact_in_session"]

# Output fields no prompt reads and no store keeps as text: the LLM client's raw response.
_SKIPPED_FIELDS = frozenset({"raw"})
_OUTPUTS = ("agent_output", "reflection", "skill_manager_output")
# What a producer sent: the parts whose kept paths (``keep:metadata.user_id``) stay as sent.
_SENT = ("trace", "sample")


def redact_context(
    redactor: Redactor,
    ctx: ACEStepContext,
    *,
    redacted_in: ACEStepContext | None = None,
    outputs_only: bool = False,
) -> ACEStepContext:
    """``ctx`` with its trace, sample and role outputs redacted; ``ctx`` itself when nothing changed.

    ``redacted_in``: a context redacted already (the step's input, ``ctx`` its output): a part
    that is the same object there is not read again. ``outputs_only``: the trace and sample are
    known to be redacted (a later step of a chain whose first step redacted them): only the roles'
    outputs are read, numbered after the placeholders the trace holds.
    """
    if redactor.off:
        return ctx
    parts: dict[str, Any] = {"trace": ctx.trace, "sample": ctx.sample}
    parts.update({name: getattr(ctx, name) for name in _OUTPUTS})
    present = {name: value for name, value in parts.items() if value is not None}
    if not present:
        return ctx
    session = redactor.session(
        reserved_later=lambda: json_text({name: _plain(value) for name, value in present.items()})
    )
    todo = {
        name: value
        for name, value in present.items()
        if not (outputs_only and name not in _OUTPUTS)
        and not (redacted_in is not None and getattr(redacted_in, name) is value)
    }
    models = {name: value for name, value in todo.items() if isinstance(value, BaseModel)}
    changes: dict[str, Any] = {}
    kept = redactor.spec.kept
    for name, value in todo.items():  # the trace and sample first: they number what they hold
        if name not in models:
            redacted = _redact(session, value, kept if name in _SENT else ())
            if redacted is not value:
                changes[name] = redacted
    changes.update(_redact_models(session, models))
    return ctx.replace(**changes) if changes else ctx


def redact_in_session(session: RedactionSession, value: Any, kept: tuple[tuple[str, ...], ...] = ()) -> Any:
    """``value`` (a sample, a role's output, a JSON value) redacted in ``session``; itself when unchanged.

    For parts of one task redacted at different times (an evaluation's task, then each answer to
    it): in one session a value is the same placeholder in all of them. ``kept`` as in _redact.
    """
    return _redact(session, value, kept)


def _redact_models(session: RedactionSession, models: dict[str, BaseModel]) -> dict[str, Any]:
    """The role outputs among ``models`` that redaction changed, rebuilt; all read as one text."""
    if not models:
        return {}
    dumped = {name: _plain(model) for name, model in models.items()}
    redacted = session.json(dumped)
    if redacted is dumped:
        return {}  # the usual case on a worker: nothing new in what the roles wrote
    changes: dict[str, Any] = {}
    for name, model in models.items():
        if redacted[name] is not dumped[name]:
            kept = {field: getattr(model, field) for field in _SKIPPED_FIELDS & set(type(model).model_fields)}
            changes[name] = type(model).model_validate({**redacted[name], **kept})
    return changes


def _plain(value: Any) -> Any:
    """``value`` as JSON-able data, for finding the placeholders it already holds."""
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", exclude=set(_SKIPPED_FIELDS) & set(type(value).model_fields))
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    return value


def _redact(session: RedactionSession, value: Any, kept: tuple[tuple[str, ...], ...] = ()) -> Any:
    """``value`` (a JSON value, a pydantic model, a dataclass sample) redacted; itself when unchanged.

    ``kept``: dotted paths from the top of a trace dict or sample whose values stay as sent.
    """
    if isinstance(value, BaseModel):
        return _redact_model(session, value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return _redact_dataclass(session, value, kept)
    if isinstance(value, list):
        items = [_redact(session, item) for item in value]
        return value if all(new is old for new, old in zip(items, value, strict=True)) else items
    return redact_keeping(kept, value, session.json)


def _redact_model(session: RedactionSession, model: BaseModel) -> BaseModel:
    changes = {}
    for name in type(model).model_fields:
        if name in _SKIPPED_FIELDS:
            continue
        value = getattr(model, name)
        redacted = _redact(session, value)
        if redacted is not value:
            changes[name] = redacted
    return model.model_copy(update=changes) if changes else model


def _redact_dataclass(session: RedactionSession, sample: Any, kept: tuple[tuple[str, ...], ...]) -> Any:
    changes = {}
    for field in dataclasses.fields(sample):
        value = getattr(sample, field.name)
        if isinstance(value, str | list | dict):
            # A kept path's first part names the field (metadata), the rest a path into it.
            inside = tuple(path[1:] for path in kept if path[0] == field.name and len(path) > 1)
            redacted = _redact(session, value, inside)
            if redacted is not value:
                changes[field.name] = redacted
    return dataclasses.replace(sample, **changes) if changes else sample
