"""Skillbook update operations, built short: ``batch(add("..."), tag(skill_id, helpful=1))``."""

from __future__ import annotations

from typing import Any

from ace_workers.core import UpdateBatch, UpdateOperation


def add(content: str, section: str = "general", **fields: Any) -> UpdateOperation:
    return UpdateOperation(type="ADD", section=section, content=content, **fields)


def tag(skill_id: str, **counts: int) -> UpdateOperation:
    return UpdateOperation(type="TAG", skill_id=skill_id, metadata=counts)


def update(skill_id: str, content: str) -> UpdateOperation:
    return UpdateOperation(type="UPDATE", skill_id=skill_id, content=content)


def remove(skill_id: str) -> UpdateOperation:
    return UpdateOperation(type="REMOVE", skill_id=skill_id)


def batch(*operations: UpdateOperation) -> UpdateBatch:
    return UpdateBatch(operations=list(operations))
