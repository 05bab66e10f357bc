"""What follows a sample's last step (or its failure): its admission slot frees, and the next epoch starts."""

from __future__ import annotations

import logging

from ..store.batches import SampleFinish
from .admission import resume, sample_left
from .dispatch import Dispatcher

__all__ = ["start_next_epoch"]

logger = logging.getLogger(__name__)


def start_next_epoch(
    dispatch: Dispatcher,
    batch_id: str,
    epoch: int,
    finish: SampleFinish | None,
    *,
    epochs: int | None = None,
) -> None:
    """Start epoch ``epoch + 1`` once every sample of ``epoch`` finished, or finish starting it.

    The task whose count completes the epoch starts the next one. A final task delivered
    again (its sample counted already, ``finish`` None) checks too: if the worker that
    completed the epoch died while sending the next one, the rest is sent from where it
    stopped (:func:`~.epochs.resume_batch`). With admission on, the sample's slot frees and the
    next admitted samples (of any tenant) are sent.

    ``epochs``: the batch's epochs when the sample was sent (its payload's ``total_epochs``), if
    known. A batch's epochs never grow (``end_at_epoch`` only ends it sooner), so a sample of that
    epoch or a later one has no epoch to start and its batch's status is not read.
    """
    runtime = dispatch.runtime
    # Its admission slot frees, and the window's free slots go to whichever tenant is due, sent by a
    # worker of that batch's queue (worker/admission.py).
    sample_left(dispatch, batch_id, epoch, finish)
    if epochs is not None and epoch >= epochs:
        return
    status = runtime.batches.status(batch_id)
    if epoch < status.epochs:
        finished = runtime.batches.finished_in_epoch(batch_id, epoch) if finish is None else finish.finished
        if finished >= status.per_epoch and resume(dispatch, batch_id, epoch=epoch + 1):
            logger.info("batch %s: epoch %d finished, epoch %d sent", batch_id, epoch, epoch + 1)
