"""What a submission saved apart may leave, read off the views for the scheduler leader's sweep: a submission saves its
workflow, then its allocations (domain.app.workflows), so a submitter gone between the two leaves READY stages that no
allocation answers, and a stop that came between them leaves a queued allocation of a stage that ended. The sweep
decides each again on the aggregates (domain.app.strays)."""

from __future__ import annotations

from datetime import datetime
from uuid import UUID

from domain.allocation import QueueState
from domain.fuzzfile.semantics import StageStatus
from projections.views import Views

LIVE = (StageStatus.READY, StageStatus.STARTED, StageStatus.RUNNING)


def unallocated_workflows(views: Views, quiet_since: datetime) -> list[UUID]:
    """Unended hot workflows, unchanged since `quiet_since` (a submission still saving its allocations is not one),
    with a READY stage whose attempt has no allocation in the views."""
    workflows = views.workflows
    found: list[UUID] = []
    with workflows.lock:
        for workflow in workflows.mirror.values():
            if workflow.id in workflows.finished or workflows.updated.get(workflow.id, quiet_since) > quiet_since:
                continue
            allocated = workflows.current.get(workflow.id, {})
            for view in workflow.live_stage_views():
                known = allocated.get(view.name)
                if view.status is StageStatus.READY and (known is None or known.attempt < view.attempt):
                    found.append(workflow.id)
                    break
    return found


def orphaned_allocations(views: Views) -> list[UUID]:
    """Queued allocations whose (hot) workflow no longer runs that stage attempt: it was stopped before they landed."""
    found: list[UUID] = []
    for allocation in views.queue.in_states(QueueState.PENDING, QueueState.READY):
        with views.workflows.lock:
            workflow = views.workflows.mirror.get(allocation.workflow_id)
            view = workflow.stage(allocation.stage) if workflow is not None else None
        if view is not None and (view.attempt != allocation.attempt or view.status not in LIVE):
            found.append(allocation.id)
    return found
