"""``ace-workers skillbook label ...``: labelled versions (prod, canary, ...) that readers serve."""

from __future__ import annotations

import typer

from .help import HelpGroup

__all__ = ["label_app"]

label_app = typer.Typer(
    cls=HelpGroup,
    help="Labelled versions: point prod, canary or any name at a version; readers of a label serve it.",
    no_args_is_help=True,
)
