"""What one scheduling pass decided: placements, backfills, preemptions, the reservation, reasons, counters."""
from __future__ import annotations

from datetime import datetime

import msgspec

from domain.scheduler.reasons import Why


class Placement(msgspec.Struct, frozen=True, kw_only=True):
    allocation_id: str
    node_ids: tuple[str, ...]
    priority: float


class Backfilled(msgspec.Struct, frozen=True, kw_only=True):
    allocation_id: str
    node_ids: tuple[str, ...]
    priority: float
    ends_before_head: bool
    head_id: str


class Preemption(msgspec.Struct, frozen=True, kw_only=True):
    """Evict the victims, then place the preemptor on node_ids; each side gets its own text."""

    preemptor_id: str
    victim_ids: tuple[str, ...]
    node_ids: tuple[str, ...]
    victim_texts: tuple[str, ...]
    preemptor_text: str  # how many it preempted and why: the victims are not named (another tenant's work)


class ReservationHeld(msgspec.Struct, frozen=True, kw_only=True):
    allocation_id: str
    node_ids: tuple[str, ...]
    estimated_start: datetime | None


class ProvisionAsk(msgspec.Struct, frozen=True, kw_only=True):
    """Ask `provisioner` for one node per reason (the allocation the new node was first packed for)."""

    provisioner: str
    reasons: tuple[str, ...]


class Unneeded(msgspec.Struct, frozen=True, kw_only=True):
    """A pending request nothing waits for any more (nothing was made for it yet): it may be canceled."""

    provisioner: str
    request_id: str


class Counters(msgspec.Struct, kw_only=True):
    considered: int = 0
    placed: int = 0
    backfilled: int = 0
    preempted: int = 0
    evictions: int = 0
    blocked: int = 0
    waiting: int = 0
    set_aside: int = 0  # allocations the pass could not compute with (Reason.INVALID_REQUEST)
    near_miss_priority_gaps: int = 0
    protected_victims: int = 0
    waiting_for_provision: int = 0


class Decisions(msgspec.Struct, kw_only=True):
    placements: list[Placement] = []
    backfills: list[Backfilled] = []
    preemptions: list[Preemption] = []
    reservation: ReservationHeld | None = None
    reasons: dict[str, Why] = {}
    priorities: dict[str, float] = {}
    counters: Counters = msgspec.field(default_factory=Counters)
    provision: list[ProvisionAsk] = []
    unneeded: list[Unneeded] = []

    def placed_nodes(self) -> dict[str, tuple[str, ...]]:
        """Every allocation started this pass (placed or backfilled) with its nodes."""
        started = {p.allocation_id: p.node_ids for p in self.placements}
        started.update((b.allocation_id, b.node_ids) for b in self.backfills)
        return started
