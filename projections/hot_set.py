"""The hot set: which finished workflows the views keep, and the trim that lets the older ones go cold.

The views keep every live workflow (pending, started, held) and the `keep` most recently finished; older finished
workflows leave memory (the workflows view's aggregate, activity and stage times, the queue's allocations) and
are read on demand from the log (projections.cold_workflows). A finished workflow stays hot while any of its
allocations has not ended, so a node is still told to stop what it runs. The trim is decided from the log alone
(the order workflows ended in), so every process and every replay of the same log keeps the same hot set.
"""

from __future__ import annotations

from itertools import islice
from uuid import UUID

from domain.allocation import ENDED as ALLOCATION_ENDED
from projections.queue import QueueView
from projections.workflows import WorkflowsView

DEFAULT_HOT_WORKFLOWS = 10_000


def trim(workflows: WorkflowsView, queue: QueueView, keep: int) -> list[UUID]:
    """Forget the oldest finished workflows beyond `keep` (call under the views' lock); returns their ids."""
    over = len(workflows.finished) - keep
    if over <= 0:
        return []
    # the oldest first, and only as far as needed: a batch's trim costs what it forgets, not the hot set's size
    evictable = (w for w in workflows.finished if all(_ended(queue, a) for a in queue.of_workflow(w)))
    gone = list(islice(evictable, over))
    if workflows.cold_rows is not None:  # their list rows first: a list never misses one in between
        workflows.cold_rows.write([row for w in gone if (row := workflows.row(w)) is not None])
    for workflow_id in gone:
        workflows.forget(workflow_id, set(queue.of_workflow(workflow_id)))
        queue.forget(workflow_id)
    return gone


def _ended(queue: QueueView, allocation_id: UUID) -> bool:
    found = queue.allocation(allocation_id)
    return found is None or found.state in ALLOCATION_ENDED
