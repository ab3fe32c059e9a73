"""A tiny test-only aggregate and application: saves of several events exercise atomic commits."""

from __future__ import annotations

from uuid import UUID, uuid4

from eventsourcing.application import Application
from eventsourcing.domain import Aggregate, event


class Ledger(Aggregate):
    @event("Opened")
    def __init__(self, owner: str) -> None:
        self.owner = owner
        self.entries: list[int] = []

    @event("Entered")
    def enter(self, amount: int) -> None:
        self.entries.append(amount)


class Ledgers(Application[UUID]):
    def open_with_entries(self, entries: int) -> UUID:
        ledger = Ledger(owner=f"owner-{uuid4().hex[:6]}")
        for amount in range(entries):
            ledger.enter(amount)
        self.save(ledger)
        return ledger.id

    def enter(self, ledger_id: UUID, amount: int) -> None:
        ledger: Ledger = self.repository.get(ledger_id)
        ledger.enter(amount)
        self.save(ledger)


def env_for(url: str, cluster: str, **extra: str) -> dict[str, str]:
    return {"PERSISTENCE_MODULE": "adapters.jetstream", "ROVING_NATS_URL": url, "ROVING_CLUSTER": cluster, **extra}
