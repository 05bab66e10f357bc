"""ACERunner: the epoch loop shared by every runner; everything per-sample is the pipeline's."""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from pipeline import Pipeline, SampleResult

from ..core.context import ACEStepContext, SkillbookView
from ..core.skillbook import Skillbook
from ..observability.spans import ATTR_RUNNER
from ..observability.trace_hook import TracingHook
from ..observability.tracing import tracing_available

__all__ = ["ACERunner"]


class ACERunner:
    """Runs a pipeline of ACE steps over inputs, epoch after epoch, learning into one skillbook.

    Usable as it is, ``ACERunner(Pipeline(steps), skillbook).run(items)``: each
    item goes onto the context as ``trace`` when the pipeline needs one from
    outside (a learning tail), else as ``sample`` (an execute step reads it).
    Subclasses choose the steps (``from_roles``) and may map items themselves
    by overriding ``_item_fields`` or ``_build_context``; iteration, error
    isolation, the foreground/background split and concurrency belong to the
    pipeline.

    With OpenTelemetry installed (the ``otel`` extra) each sample is one trace:
    an ``ace.sample`` span, a span per step, a span per LLM call, sent to the
    provider :mod:`ace_workers.observability.tracing` picks (a no-op until the
    application or :func:`~ace_workers.observability.configure_tracing` sets one).
    """

    def __init__(self, pipeline: Pipeline[ACEStepContext], skillbook: Skillbook) -> None:
        self.pipeline = pipeline
        self.skillbook = skillbook
        if tracing_available() and not any(isinstance(hook, TracingHook) for hook in pipeline.hooks):
            pipeline.hooks.append(TracingHook({ATTR_RUNNER: type(self).__name__}))

    def save(self, path: str | os.PathLike[str]) -> None:
        """Save the skillbook (waits for nothing: call wait_for_background first if learning runs)."""
        self.skillbook.save_to_file(path)

    def load(self, path: str | os.PathLike[str]) -> None:
        """Replace the skillbook's contents with the one saved at ``path``, after background learning ends.

        The steps keep the same skillbook object, so the next run works with the
        loaded skills. A file that cannot be read or parsed raises
        SkillbookFormatError (naming it) and leaves the skillbook as it was.
        """
        loaded = Skillbook.load_from_file(path)
        self.wait_for_background()
        self.skillbook.replace_with(loaded)

    def wait_for_background(self, timeout: float | None = None) -> None:
        """Block until background learning has finished; TimeoutError after ``timeout`` seconds."""
        self.pipeline.wait_for_background(timeout)

    @property
    def learning_stats(self) -> dict[str, int]:
        """Background learning progress: active, completed, failed."""
        return self.pipeline.background_stats()

    def run(
        self, items: Iterable[Any], epochs: int = 1, *, wait: bool = True, workers: int = 1
    ) -> list[SampleResult[ACEStepContext]]:
        """Run the pipeline over every item, ``epochs`` times; one result per item per epoch."""
        return self._run(items, epochs=epochs, wait=wait, workers=workers)

    def _item_fields(self, item: Any) -> dict[str, Any]:
        """The context fields one input item fills: ``trace`` if the pipeline needs one, else ``sample``."""
        return {"trace": item} if "trace" in self.pipeline.requires else {"sample": item}

    def _build_context(
        self,
        item: Any,
        *,
        epoch: int,
        total_epochs: int,
        index: int,
        total: int | None,
        global_sample_index: int,
    ) -> ACEStepContext:
        """A fully initialised context: the item, the skillbook view and the run's counters."""
        return ACEStepContext(
            skillbook=SkillbookView(self.skillbook),
            epoch=epoch,
            total_epochs=total_epochs,
            step_index=index,
            total_steps=total,
            global_sample_index=global_sample_index,
            **self._item_fields(item),
        )

    def _run(
        self, items: Iterable[Any], *, epochs: int, wait: bool = True, workers: int = 1
    ) -> list[SampleResult[ACEStepContext]]:
        """Run ``epochs`` passes over ``items``; a Sequence is needed to make more than one pass.

        Each epoch starts once the learning of the one before has finished, so
        it really runs with the skillbook the previous epoch evolved;
        ``wait=False`` returns as soon as the last epoch's foreground is done.
        """
        if isinstance(epochs, bool) or not isinstance(epochs, int) or epochs < 1:
            raise ValueError(f"epochs must be an int of at least 1, got {epochs!r}")
        if epochs > 1 and not isinstance(items, Sequence):
            raise ValueError(
                f"{epochs} epochs need a Sequence (list, tuple) of inputs: an iterator "
                f"of type {type(items).__name__} can be consumed only once"
            )
        results: list[SampleResult[ACEStepContext]] = []
        for epoch in range(1, epochs + 1):
            if epoch > 1:
                self.pipeline.wait_for_background()
            results.extend(self.pipeline.run(self._contexts(items, epoch, epochs), workers=workers))
        if wait:
            self.pipeline.wait_for_background()
        return results

    def _contexts(self, items: Iterable[Any], epoch: int, epochs: int) -> Iterator[ACEStepContext]:
        # A generator, so a long stream of inputs is never held in memory at once.
        total = len(items) if isinstance(items, Sequence) else None
        for index, item in enumerate(items, start=1):
            yield self._build_context(
                item,
                epoch=epoch,
                total_epochs=epochs,
                index=index,
                total=total,
                global_sample_index=(epoch - 1) * total + index if total is not None else index,
            )
