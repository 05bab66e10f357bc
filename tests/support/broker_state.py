"""What a Redis broker holds of a fleet's step messages: waiting in a queue, or taken and unacknowledged."""

from __future__ import annotations

from ace_workers.distributed.service import Service

# kombu's Redis transport keeps every message a worker took and has not acknowledged in this hash.
KOMBU_UNACKED = "unacked"


def steps_in_flight(service: Service) -> int:
    """Step messages of ``service``'s queues still waiting, plus messages taken and not yet acknowledged.

    Tasks are acknowledged late (after they ran), so 0 means every step a worker took has
    finished. Read in one transaction, so a message is not missed while it moves; kombu records
    a message it took in the instant after its BRPOP, the one moment this cannot see it.
    """
    with service.runtime.redis.pipeline(transaction=True) as pipe:
        for queue in service.runtime.settings.all_queues():
            pipe.llen(queue)
        pipe.hlen(KOMBU_UNACKED)
        return sum(pipe.execute())
