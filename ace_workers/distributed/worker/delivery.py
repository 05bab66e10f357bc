"""What a worker knows of the message a step came in: its task id, its retries, where it was taken."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["StepDelivery"]


@dataclass(frozen=True)
class StepDelivery:
    """One delivery of a step message, as the broker handed it to this worker.

    ``hostname`` is this worker's node name; ``queue`` the queue it was taken from (None if
    the broker did not say); ``retries`` how often the step was sent again before;
    ``amqp`` whether the broker is RabbitMQ (its retry countdowns differ, see retries.py).
    """

    task_id: str
    retries: int = 0
    hostname: str = ""
    queue: str | None = None
    amqp: bool = False
