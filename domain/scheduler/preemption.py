"""Preemption: which running work a blocked allocation may evict, within every Fuzzball 4.1 guard.

A victim must be preemptible, have run `minPreemptionRuntime`, sit `preemptionGap` below the preemptor,
belong to a group on the preemptor group's allow-list, sit in a pool at least `preemptionThreshold`
utilized, and not be protected by the thrash guard; and evicting it must actually seat the preemptor.
"""
from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta

from domain.scheduler.capacity import Slot, scan
from domain.scheduler.cluster import Cluster
from domain.scheduler.config import SchedulerConfig
from domain.scheduler.eligibility import Candidates
from domain.scheduler.snapshot import QueuedAllocation, RunningAllocation, Snapshot


class Outcome:
    __slots__ = ("victims", "slots", "near_miss", "protected")

    def __init__(self) -> None:
        self.victims: list[RunningAllocation] = []
        self.slots: list[Slot] = []
        self.near_miss = False
        self.protected: list[RunningAllocation] = []


class Preemptor:
    """Ranks preemptible running work once per pass and searches it for each blocked allocation."""

    def __init__(self, snapshot: Snapshot, config: SchedulerConfig, now: datetime,
                 priority: Callable[[QueuedAllocation], float | None]):
        """`priority` is None for running work it cannot rank: such work is never a victim."""
        self.config, self.now = config, now
        ripe = now - timedelta(seconds=config.min_preemption_runtime_seconds)
        ranked = [(p, -r.started_at.timestamp(), r) for r in snapshot.running
                  if r.preemptible and r.started_at <= ripe and (p := priority(r)) is not None]
        ranked.sort(key=lambda row: row[:2])
        self.ranked = [(p, r) for p, _, r in ranked]
        self.allow = {g.group_id: frozenset(g.may_preempt) for g in snapshot.group_policies}
        self.budget = config.max_evictions_per_tick
        self._failed: dict[tuple[object, ...], float] = {}  # a shape -> the highest priority that found no victims

    def is_protected(self, r: RunningAllocation) -> bool:
        since = self.now - timedelta(seconds=self.config.preemption_window_seconds)
        return sum(1 for t in r.preemptions if t >= since) >= self.config.max_preemptions_per_window

    def _victims(self, cluster: Cluster, c: Candidates, a: QueuedAllocation, p: float,
                 held: set[int], out: Outcome) -> list[tuple[float, RunningAllocation]]:
        allowed = self.allow.get(a.group_id, frozenset())
        limit = p - self.config.preemption_gap
        found = []
        for vp, v in self.ranked:
            if v.id in cluster.evicted or v.group_id not in allowed:
                continue
            slots = [cluster.by_id[n] for n in v.node_ids if n in cluster.by_id]
            if not any(s.index in c.member and s.index not in held for s in slots):
                continue
            if any(cluster.utilization(s.pool) < self.config.preemption_threshold for s in slots):
                continue
            if vp > limit:
                out.near_miss = vp < p
                break
            if self.is_protected(v):
                out.protected.append(v)
                continue
            found.append((vp, v))
        return found

    def search(self, cluster: Cluster, c: Candidates, a: QueuedAllocation, p: float,
               held: set[int]) -> Outcome:
        """Find the victims to evict for `a` (none found: `victims` stays empty); `held` slots are off limits."""
        out = Outcome()
        key = (c.key, a.cpu, a.memory, tuple(a.devices.items()), a.nodes, a.exclusive, a.group_id)
        if self.budget <= 0 or p <= self._failed.get(key, float("-inf")):
            return out
        found = self._victims(cluster, c, a, p, held, out)
        targets = [s for s in c.static if s.index not in held]
        for _, v in found:
            seats = _trial(cluster, [v], a, targets)
            if seats:
                return self._commit(cluster, out, [v], seats)
        if self.config.preemption_multi_victim_enabled and a.nodes == 1 and self.budget > 1:
            best = _smallest_set(cluster, found, a, targets, self.budget)
            if best:
                return self._commit(cluster, out, best, _trial(cluster, best, a, targets) or [])
        self._failed[key] = p
        return out

    def _commit(self, cluster: Cluster, out: Outcome, victims: list[RunningAllocation],
                seats: list[Slot]) -> Outcome:
        for v in victims:
            cluster.evict(v)
        self.budget -= len(victims)
        out.victims, out.slots = victims, seats
        return out


def _trial(cluster: Cluster, victims: list[RunningAllocation], a: QueuedAllocation,
           targets: list[Slot]) -> list[Slot] | None:
    """Would evicting these seat `a`? The cluster is left exactly as it was."""
    freed = [(cluster.by_id[n], v) for v in victims for n in v.node_ids if n in cluster.by_id]
    for slot, v in freed:
        slot.give_back(v)
    touched = {slot.index for slot, _ in freed}
    pool = [s for s in targets if s.index in touched] if a.nodes == 1 else targets
    seats = scan(pool, a)
    for slot, v in reversed(freed):
        slot.take(v)
    return seats


def _smallest_set(cluster: Cluster, found: list[tuple[float, RunningAllocation]], a: QueuedAllocation,
                  targets: list[Slot], budget: int) -> list[RunningAllocation] | None:
    """Per node, evict the cheapest victims until `a` fits; keep the node needing the fewest evictions."""
    target_ids = {s.index for s in targets}
    per_node: dict[int, list[RunningAllocation]] = {}
    for _, v in found:
        for n in v.node_ids:
            slot = cluster.by_id.get(n)
            if slot is not None and slot.index in target_ids:
                per_node.setdefault(slot.index, []).append(v)
    best: list[RunningAllocation] | None = None
    for index, victims in per_node.items():
        limit = min(len(victims), budget, len(best) - 1 if best else budget)
        for size in range(2, limit + 1):
            if _trial(cluster, victims[:size], a, [cluster.slots[index]]):
                best = victims[:size]
                break
    return best
