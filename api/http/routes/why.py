"""Why a workflow's stages wait (`/v4/workflows/{id}/why`) and one allocation's explanation (`.../explain`).

The reasons are the scheduler's, not the log's: for this cluster's work, the last pass of this process's runner
(api.http.scheduled); for another cluster's workflow on a federated control plane, the latest `SchedulingBlocked`
cause the hub holds of each allocation. A stage without a reason answers with its own status. Both routes ask
`explain_workflow`, which an explain_allocation grant passes without the right to view the workflow.
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from api.http import scheduled
from api.http.answers import Explained, WhyAnswer, WhyStage, answers
from api.http.fanout import Located, locate
from api.http.routes import common as c
from domain.app import access
from domain.app.errors import NotFound

WAITING = frozenset({"PENDING", "WAITING", "READY"})


async def located(request: Request) -> Located:
    """The workflow (of this cluster, or of the member cluster that owns it), if the caller may explain it."""
    return await locate(request, c.uuid_param(request, "id", "workflow"), access.explain_workflow)


def why_answer(stage: Any, why: Any) -> WhyStage:
    allocation_id = str(stage.allocation_id) if stage.allocation_id is not None else None
    if why is None:
        return WhyStage(stage=stage.name, allocation_id=allocation_id, reason=stage.status,
                        detail=stage.reason or f"stage is {stage.status}", facts={})
    reason = str(getattr(why.reason, "value", why.reason))
    return WhyStage(stage=stage.name, allocation_id=allocation_id, reason=reason, detail=why.message or reason,
                    facts=why.detail)


@answers(WhyAnswer)
async def why(request: Request) -> Response:
    found = await located(request)
    detail = found.detail
    everything, reason_of = c.query_bool(request, "all"), scheduled.reasons(request, found)
    chosen = [s for s in detail.stages if everything or s.status in WAITING]
    answers = [why_answer(s, reason_of(s.allocation_id) if s.allocation_id else None) for s in chosen]
    return c.labelled(WhyAnswer(stages=answers), found.label())


async def explain(request: Request) -> Response:
    located_ = await located(request)
    detail, views = located_.detail, located_.views
    aid = c.uuid_param(request, "aid", "allocation")
    stage = next((s for s in detail.stages if s.allocation_id == aid), None)
    ranked = scheduled.ranked(request, local=not located_.remote)
    row = await c.call(views.queue.get, aid, None, ranked)
    if row is None or str(row.workflow_id) != str(detail.id):
        raise NotFound("allocation")
    found = scheduled.reasons(request, located_)(aid)
    return c.labelled(Explained(allocation=row, stage=stage.name if stage else row.stage,
                                why=why_answer(stage, found) if stage else found), located_.label())
