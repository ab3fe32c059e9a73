"""Why each allocation is where it is: the scheduler runner's latest `Why` per allocation, held in memory.

Not built from events: the runner recomputes reasons every pass and sets them here; only a changed
cause becomes an event (see `domain.scheduler.reasons.blocked_events`).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from datetime import datetime
from typing import Any
from uuid import UUID

from domain.scheduler.reasons import Why


class WhyStore:
    """The latest pass's reasons by allocation id (ids as text, so UUID and str keys both find them)."""

    def __init__(self) -> None:
        self._reasons: dict[str, Why] = {}
        self._lock = threading.Lock()
        self.updated_at: datetime | None = None

    def set(self, reasons: Mapping[UUID | str, Why], at: datetime | None = None) -> None:
        """Replace the reasons with one pass's; allocations the pass did not mention are forgotten."""
        fresh = {str(k): v for k, v in reasons.items()}
        with self._lock:
            self._reasons, self.updated_at = fresh, at

    def update(self, reasons: Mapping[UUID | str, Why]) -> None:
        """Merge some reasons into the current ones."""
        with self._lock:
            self._reasons = {**self._reasons, **{str(k): v for k, v in reasons.items()}}

    def get(self, allocation_id: UUID | str) -> Why | None:
        return self._reasons.get(str(allocation_id))

    def all(self) -> dict[str, Why]:
        return dict(self._reasons)

    def __len__(self) -> int:
        return len(self._reasons)

    def __contains__(self, allocation_id: Any) -> bool:
        return str(allocation_id) in self._reasons
