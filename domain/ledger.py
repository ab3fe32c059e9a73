"""The Ledger aggregate: counted use of one limited thing, a project's quota or a shared resource, by allocation.

The scheduler decides from a snapshot; the ledger is what makes its decision exact at commit. A placement charges
the ledger of its project and of each ancestor, and of each shared resource it asks for, in the same atomic
commit as the placement itself; a charge that would pass a limit is refused (the placement with it), so a
decision made on a stale view fails harmlessly, as a full node refuses one. The allocation's end gives it back.
Limits come in with each charge (a project's quota, the cluster's count of a shared resource): lowering one never
takes anything back from what already runs, it only stops new charges until use falls below it.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any
from uuid import UUID

from eventsourcing.domain import event

from domain.ids import ledger_id
from domain.timed import TimedAggregate

PROJECT, SHARED = "project", "shared"


class LedgerFull(Exception):
    """A charge that would pass a limit: which ledger, which key, what is used, what was asked, the limit."""

    def __init__(self, kind: str, name: str, key: str, used: int, asked: int, limit: int) -> None:
        self.kind, self.name, self.key, self.used, self.asked, self.limit = kind, name, key, used, asked, limit
        what = f"project {name}'s quota of {key}" if kind == PROJECT else f"shared resource {name}"
        super().__init__(f"{what}: {used} in use + {asked} asked > {limit}")


class Ledger(TimedAggregate):
    @staticmethod
    def create_id(kind: str, name: str, **_: Any) -> UUID:
        return ledger_id(kind, name)

    @event("Opened")
    def __init__(self, kind: str, name: str, by: str, at: datetime) -> None:
        self.kind, self.name = kind, name
        self.held: dict[str, dict[str, int]] = {}
        self.used: dict[str, int] = {}

    @classmethod
    def open(cls, kind: str, name: str, *, by: str, at: datetime) -> Ledger:
        return cls(kind=kind, name=name, by=by, at=at)

    def shortfall(self, amounts: Mapping[str, int], limits: Mapping[str, int]) -> LedgerFull | None:
        """The first limit `amounts` would pass on top of what is held; None when all fit."""
        for key, limit in sorted(limits.items()):
            asked = amounts.get(key, 0)
            if asked and self.used.get(key, 0) + asked > limit:
                return LedgerFull(self.kind, self.name, key, self.used.get(key, 0), asked, limit)
        return None

    def charge(self, allocation_id: str, amounts: Mapping[str, int], limits: Mapping[str, int], *,
               by: str, at: datetime) -> bool:
        """Hold `amounts` for the allocation, or raise LedgerFull; the same charge again is a no-op (False)."""
        if allocation_id in self.held:
            return False
        full = self.shortfall(amounts, limits)
        if full is not None:
            raise full
        self._charged(allocation_id=allocation_id, amounts={k: v for k, v in amounts.items() if v}, by=by, at=at)
        return True

    @event("Charged")
    def _charged(self, allocation_id: str, amounts: dict[str, int], by: str, at: datetime) -> None:
        self.held[allocation_id] = dict(amounts)
        for key, value in amounts.items():
            self.used[key] = self.used.get(key, 0) + value

    def discharge(self, allocation_id: str, *, by: str, at: datetime) -> bool:
        """The allocation ended: what it held is free again; False when it held nothing here."""
        if allocation_id not in self.held:
            return False
        self._discharged(allocation_id=allocation_id, by=by, at=at)
        return True

    @event("Discharged")
    def _discharged(self, allocation_id: str, by: str, at: datetime) -> None:
        for key, value in self.held.pop(allocation_id).items():
            left = self.used.get(key, 0) - value
            if left:
                self.used[key] = left
            else:
                self.used.pop(key, None)
