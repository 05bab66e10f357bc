"""The spec's ``implementations`` path: the LLM-backed roles, which live in :mod:`ace_workers.roles`."""

from .roles import Agent, Reflector, SkillManager

__all__ = ["Agent", "Reflector", "SkillManager"]
