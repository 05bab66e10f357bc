"""The console's evaluations area: how a skillbook's versions do, and how it grew.

One page (``/skillbooks/NAME/evaluations``) with four figures, each a plot (and most
a table): accuracy per version from the recorded ``skillbook evaluate`` runs; the live
A/B success rate of each label with its 95% Wilson interval (what the fleet served);
the active skills and their characters over the versions, from the change log; and
the LLM tokens (and cost, where priced) per sample of its recent batches.
"""

from __future__ import annotations

from typing import Any

from starlette.routing import BaseRoute

from ....distributed.store.evaluations import EVALUATIONS_KEPT
from ....distributed.store.label_names import HEAD
from ....distributed.store.outcomes import LabelOutcomes, read_outcomes
from ....distributed.store.store import RedisSkillbookStore
from ...errors import BadRequestError
from ...views import View, page
from ..batches import batch_rows, learning_cost
from .accuracy import GROUPINGS, accuracy_of
from .curves import DEFAULT_VERSIONS, MAX_VERSIONS, skill_curves

__all__ = ["ROUTES", "evaluations_page", "live_ab"]

# Recent batches of the skillbook whose cost per sample is plotted (the batches page shows more).
COST_BATCHES = 50


def evaluations_page(view: View) -> dict[str, Any]:
    """Accuracy per version, live A/B per label, and skill count and size over versions."""
    store = view.store()
    limit = view.int_query("limit", EVALUATIONS_KEPT, minimum=1, maximum=EVALUATIONS_KEPT)
    by = view.query("by", GROUPINGS[0])
    if by not in GROUPINGS:
        raise BadRequestError(f"by={by!r}: use one of {', '.join(GROUPINGS)}")
    versions = view.int_query("versions", DEFAULT_VERSIONS, minimum=1, maximum=MAX_VERSIONS)
    return {
        "name": store.name,
        "version": store.version(),
        "accuracy": {**accuracy_of(store.evaluations.recent(limit), by), "limit": limit},
        "ab": live_ab(view, store),
        "curves": skill_curves(store, versions),
        # What its recent batches spent per sample, as the batches page plots it (usage per batch).
        "token_cost": learning_cost(batch_rows(view, store.name, COST_BATCHES)),
    }


def live_ab(view: View, store: RedisSkillbookStore) -> dict[str, Any]:
    """Each label's live executions (served, judged, succeeded), success rate and 95% Wilson interval.

    Every label the skillbook has is listed, and every label (and ``head``) that
    served something; each row names the version the label points at now.
    """
    outcomes = read_outcomes(view.state.redis, store.keys)
    labels = store.labels.all()
    head = store.version()
    rows = []
    for label in sorted(set(outcomes) | set(labels)):
        counts = outcomes.get(label) or LabelOutcomes(label)
        version = head if label == HEAD else labels.get(label)
        rows.append({**counts.to_dict(), "version": version})
    return {"labels": rows}


ROUTES: list[BaseRoute] = [
    *page(
        "/skillbooks/{name}/evaluations",
        "evaluations/index.html",
        evaluations_page,
        name="evaluations",
        summary="Accuracy per version (evaluate runs), live A/B per label with 95% interval, skill curves.",
    ),
]
