"""What the integration runners (LangChain, BrowserUse, ClaudeCode) share: how they are built, and the
spec's lifecycle helpers (``IntegrationRunner``)."""

from __future__ import annotations

import os

from ..core.skillbook import Skillbook
from ..distributed.llms import model_client
from ..protocols import LLMClientLike
from .base import ACERunner

__all__ = ["IntegrationRunner", "roles_llm", "starting_skillbook"]


class IntegrationRunner(ACERunner):
    """An :class:`ACERunner` with the helpers the spec gives the integration runners.

    ``get_strategies`` shows the skillbook; ``save_skillbook``,
    ``load_skillbook`` and ``wait_for_learning`` are the reference framework's
    names for :meth:`save`, :meth:`load` and :meth:`wait_for_background`.
    """

    def get_strategies(self) -> str:
        """The skillbook's active skills as markdown, grouped by section, for display."""
        return self.skillbook.as_markdown()

    def save_skillbook(self, path: str | os.PathLike[str]) -> None:
        """Save the skillbook to ``path`` (as :meth:`save`)."""
        self.save(path)

    def load_skillbook(self, path: str | os.PathLike[str]) -> None:
        """Load the skillbook saved at ``path`` (as :meth:`load`)."""
        self.load(path)

    def wait_for_learning(self, timeout: float | None = None) -> None:
        """Block until background learning has finished (as :meth:`wait_for_background`)."""
        self.wait_for_background(timeout)


def starting_skillbook(
    skillbook: Skillbook | None, skillbook_path: str | os.PathLike[str] | None, where: str
) -> Skillbook:
    """``skillbook``, or the one saved at ``skillbook_path``, or a new empty one; never both given."""
    if skillbook is not None and skillbook_path is not None:
        raise ValueError(f"{where}: give skillbook or skillbook_path, not both")
    if skillbook_path is not None:
        return Skillbook.load_from_file(skillbook_path)
    return skillbook if skillbook is not None else Skillbook()


def roles_llm(ace_model: str, ace_max_tokens: int) -> LLMClientLike:
    """The client of ``ace_model`` for the Reflector and SkillManager: "sim" (the simulated LLM) or
    a litellm model, checked now.

    Raises:
        ModelUnavailableError: litellm knows no provider for ``ace_model``, or its credentials are unset.
    """
    return model_client(ace_model, max_tokens=ace_max_tokens)
