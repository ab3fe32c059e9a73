"""The scheduler's own state, held beside the views: the last pass this process's runner made, for the API and the UI.

The runner publishes each pass whole when its commits are done (`publish`); readers take `last` once per answer, so
an answer never mixes two passes' reasons, priorities and figures. A process whose runner never led (a standby API
worker, `roving api` without a scheduler) has the empty pass: `why` falls back to the stage's own status, a queue
row shows the priority the view computes, and `last_pass` is `{}`, as they always have.

The views hold only what the log says; the answers that show these join them to the views (api.http.scheduled).
"""

from __future__ import annotations

from uuid import UUID

from domain.scheduler.last_pass import LastPass
from domain.scheduler.reasons import Why


class SchedulerState:
    """The last pass of this process's runner (`LastPass`, replaced whole; reading it needs no lock)."""

    def __init__(self) -> None:
        self.last = LastPass()

    def publish(self, last: LastPass) -> None:
        self.last = last

    def why(self, allocation_id: UUID | str) -> Why | None:
        return self.last.why(allocation_id)
