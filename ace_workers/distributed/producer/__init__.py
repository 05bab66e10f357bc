"""Producers: send inputs as tracked batches, follow them, keep traces for the nightly run."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...lazy import lazy_exports

if TYPE_CHECKING:
    from .distributed_runner import DistributedRunner
    from .errors import (
        BatchExistsError,
        BatchSizeError,
        LabelNotServedError,
        NoWorkersError,
        ProducerConfigError,
        ProducerError,
        RemoteStepError,
    )
    from .http_producer import HttpProducer, IntakeBatch
    from .inbox import append_to_inbox
    from .producer import BatchHandle, Producer

__all__ = [
    # sending and following batches
    "Producer",
    "BatchHandle",
    "DistributedRunner",
    "append_to_inbox",
    # sending through intake, with an API key and no Redis URL
    "HttpProducer",
    "IntakeBatch",
    # errors
    "ProducerError",
    "BatchExistsError",
    "BatchSizeError",
    "LabelNotServedError",
    "NoWorkersError",
    "ProducerConfigError",
    "RemoteStepError",
]

# PEP 562: each name is imported from its module on first use, so importing one module of
# this package (its errors, say) does not import the others, nor Celery.
_SOURCES = (
    ".errors",
    ".distributed_runner",
    ".http_producer",
    ".inbox",
    ".producer",
)
__getattr__ = lazy_exports(__name__, __all__, _SOURCES)
