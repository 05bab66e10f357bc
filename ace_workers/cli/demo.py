"""``ace-workers demo``: ACE with the simulated LLM, the accuracy rising as skills are learned."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from .options import JsonOption

__all__ = ["demo_command"]


def demo_command(
    samples: Annotated[int, typer.Option(min=1, help="Synthetic tasks per epoch.")] = 30,
    topics: Annotated[int, typer.Option(min=1, max=8, help="Topics (hidden rules) the tasks cover.")] = 5,
    epochs: Annotated[int, typer.Option(min=1, help="Passes over the tasks.")] = 3,
    seed: Annotated[int, typer.Option(help="Seed of the tasks and the simulated LLM.")] = 7,
    save: Annotated[Path | None, typer.Option(help="Write the learned skillbook to this JSON file.")] = None,
    as_json: JsonOption = False,
) -> None:
    """Run ACE with the simulated LLM and show the accuracy rising as skills are learned."""
    from rich.console import Console

    from ..demo import run_demo
    from .output import console, print_json

    # With --json the running commentary is not printed: stdout holds the one JSON document.
    shown = Console(quiet=True) if as_json else console
    report = run_demo(samples=samples, topics=topics, epochs=epochs, seed=seed, save=save, console=shown)
    if as_json:
        print_json(report.to_dict())
    if report.failed_samples:
        raise typer.Exit(code=1)
