"""What the scheduler leader sweeps now and then, read off the views: hot workflows with a READY stage attempt that no
allocation answers (a submission saves its workflow, then its allocations; domain.app.strays.allocate_ready requests
the missing ones on the aggregates)."""

from __future__ import annotations

from datetime import datetime
from uuid import UUID

from domain.fuzzfile.semantics import StageStatus
from projections.views import Views


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
