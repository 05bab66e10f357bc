"""Producers: send inputs as tracked batches, follow them, keep traces for the nightly run."""

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
from .inbox import append_to_inbox
from .producer import BatchHandle, Producer

__all__ = [
    # sending and following batches
    "Producer",
    "BatchHandle",
    "DistributedRunner",
    "append_to_inbox",
    # errors
    "ProducerError",
    "BatchExistsError",
    "BatchSizeError",
    "LabelNotServedError",
    "NoWorkersError",
    "ProducerConfigError",
    "RemoteStepError",
]
