"""The decision function: `schedule(snapshot, config, now) -> Decisions`.

Allocations are taken in priority order. Until one is blocked for capacity, each is placed first-fit (or,
with preemption on, seated by evicting within the guards). The first blocked one becomes the head and
holds a reservation; after it, with backfill on, lower work runs only where it cannot delay the head,
and with backfill off nothing passes the head. An allocation the pass cannot compute with (its priority
does not evaluate, its stored numbers overflow) is set aside with its reason; the others go on.

Project quotas and shared resources are checked in the same pass (domain.scheduler.quotas, .shared): work over
its project's quota waits without holding anything (other projects' work goes on); work short of a shared
resource may be the head, whose reservation then keeps that resource as it keeps nodes. What runs behind the
head is domain.scheduler.backfill's.
"""
from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from domain.scheduler.backfill import Backfill, iso, protected_why
from domain.scheduler.capacity import Slot
from domain.scheduler.cluster import Cluster
from domain.scheduler.config import SchedulerConfig
from domain.scheduler.decisions import Decisions, Placement, Preemption, ReservationHeld
from domain.scheduler.eligibility import Candidates, capacity_why, static_why
from domain.scheduler.preempted_text import preempted_text
from domain.scheduler.preemption import Outcome, Preemptor
from domain.scheduler.priority import Evaluator, Unevaluable
from domain.scheduler.provisioning import Provisioning, unreserve
from domain.scheduler.quotas import Quotas, charge
from domain.scheduler.reasons import Reason, Why
from domain.scheduler.reservation import Reservation, reserve
from domain.scheduler.sanity import set_aside, unusable
from domain.scheduler.shared import SharedPool
from domain.scheduler.snapshot import Dependency, Kind, QueuedAllocation, RunningAllocation, Snapshot


def schedule(snapshot: Snapshot, config: SchedulerConfig, now: datetime) -> Decisions:
    return _Pass(snapshot, config, now).run()


class _Pass(Backfill):
    def __init__(self, snapshot: Snapshot, config: SchedulerConfig, now: datetime):
        self.snapshot, self.config, self.now = snapshot, config, now
        self.evaluate = Evaluator(config.priority)
        self.cluster = Cluster(snapshot, config)
        self.quotas = Quotas(snapshot, lambda n: slot.view if (slot := self.cluster.by_id.get(n)) else None)
        self.shared = SharedPool(config.shared_resources, snapshot.running)
        self.d = Decisions()
        self.reservation: Reservation | None = None
        self.held: set[int] = set()
        self._preemptor: Preemptor | None = None
        self._static: dict[tuple[object, ...], Why | None] = {}
        self._capacity: dict[tuple[object, ...], Why] = {}
        self.provisioning = Provisioning(snapshot.templates, frozenset(config.ignored_annotations), now) \
            if snapshot.templates else None

    def priority(self, a: QueuedAllocation) -> float:
        """A finite priority, or Unevaluable naming what the pass cannot compute with."""
        problem = unusable(a, self.now)
        if problem is not None:
            raise Unevaluable(problem[1], field=problem[0])
        return self.evaluate.evaluate(a, self.now)

    def rank(self, a: QueuedAllocation) -> float | None:
        """The priority of running work for preemption; None leaves it out of the victims."""
        try:
            return self.priority(a)
        except Unevaluable:
            return None

    def run(self) -> Decisions:
        d = self.d
        ranked = []
        for a in self.snapshot.queued:
            try:
                p = d.priorities[a.id] = self.priority(a)
            except Unevaluable as error:
                d.reasons[a.id] = set_aside(error.field, str(error))
                d.counters.set_aside += 1
                continue
            if a.waiting_on is not None:
                d.reasons[a.id] = Why(reason=Reason.WAITING_DEPENDENCY, message=_waiting_text(a.waiting_on),
                                      detail={"stages": list(a.waiting_on.stages),
                                              "condition": a.waiting_on.condition})
                d.counters.waiting += 1
            elif a.provisioning:
                d.reasons[a.id] = Why(reason=Reason.WAITING_FOR_VOLUME, message=a.provisioning,
                                      detail={"volume": a.provisioning})
                d.counters.waiting += 1
            else:
                ranked.append((-p, a.submitted_at, a.id, a))
        ranked.sort(key=lambda row: row[:3])
        for r in self.snapshot.running:
            d.reasons.setdefault(r.id, Why(reason=Reason.RUNNING))
        for negative, _, _, a in ranked:
            self.consider(a, -negative)
        if self.provisioning is not None:
            d.provision, d.unneeded = self.provisioning.asks(), self.provisioning.unneeded()
            d.counters.waiting_for_provision = self.provisioning.waiting
        return d

    def consider(self, a: QueuedAllocation, p: float) -> None:
        self.d.counters.considered += 1
        c = self.cluster.candidates(a)
        why = self.static_why(c, a) or self.limits_why(a)
        if why is not None:
            self.block(a, why)
        elif self.reservation is None:
            self.front(a, p, c)
        elif not self.config.backfill_enabled:
            self.block(a, self.behind_head())
        else:
            self.backfill(a, p, c)

    def static_why(self, c: Candidates, a: QueuedAllocation) -> Why | None:
        key = (c.key, a.cpu, a.memory, tuple(a.devices.items()), a.nodes)
        if key not in self._static:
            self._static[key] = static_why(c, a)
        return self._static[key]

    def limits_why(self, a: QueuedAllocation) -> Why | None:
        """Its project (held, or no quota room for its request) or a shared resource it can never have."""
        if not a.project and not a.shared:
            return None
        return self.quotas.held(a) or self.quotas.why(a, charge(a)) or self.shared.never_why(a)

    def capacity_why(self, c: Candidates, a: QueuedAllocation, service: bool) -> Why:
        """Computed once per shape per pass: the roomiest node is found by a full scan."""
        key = (c.key, a.cpu, a.memory, tuple(a.devices.items()), a.nodes, a.exclusive, a.host_ports, service)
        if key not in self._capacity:
            self._capacity[key] = capacity_why(c, a, service)
        return self._capacity[key]

    def block(self, a: QueuedAllocation, why: Why, provision: bool = True) -> None:
        if provision and self.provisioning is not None:  # a node a provisioner makes may take it instead
            why = self.provisioning.consider(a, why)
        self.d.reasons[a.id] = why
        self.d.counters.blocked += 1

    def front(self, a: QueuedAllocation, p: float, c: Candidates) -> None:
        slots = self.cluster.find(c, a)
        shared = self.shared.fits(a)
        if slots is not None and shared:
            return self.place(a, p, slots)
        outcome = self.preempt(a, p, c) if shared else None  # evicting frees nodes, not a shared resource
        if outcome is not None and outcome.victims:
            return
        res = reserve(self.cluster, c, a, self.now)
        if a.shared:
            res.start = self.shared_start(a, res.start)
        if self.provision_instead(a, res):
            return
        self.reservation = res
        self.held = {slot.index for slot in res.slots}
        self.d.reservation = ReservationHeld(allocation_id=a.id, node_ids=res.node_ids(),
                                             estimated_start=res.start)
        why = self.capacity_why(c, a, a.kind is Kind.SERVICE) if slots is None else self.shared.why(a)
        detail = dict(why.detail, estimated_start=iso(res.start), reserved_nodes=len(res.slots))
        if outcome is not None and outcome.protected:
            why = protected_why(outcome, self.config)
            detail = dict(detail, **why.detail)
        self.block(a, Why(reason=why.reason, message=why.message, detail=detail), provision=False)

    def provision_instead(self, a: QueuedAllocation, res: Reservation) -> bool:
        """A node being made that arrives before real ones free up takes the head, which then holds no real node."""
        waiting = self.provisioning.offer(a, res.start) if self.provisioning is not None else None
        if waiting is None:
            return False
        unreserve(res)
        self.block(a, waiting, provision=False)
        return True

    def shared_start(self, head: QueuedAllocation, nodes_start: datetime | None) -> datetime | None:
        """The head starts once its nodes and its shared resources are both free; the pool keeps its share."""
        cluster = self.cluster
        start = self.shared.earliest(head, self.now, cluster.releases, cluster.evicted)
        if start is not None and nodes_start is not None:
            start = max(start, nodes_start)
        self.shared.hold(head, start, self.now, cluster.releases, cluster.evicted)
        return start if nodes_start is not None else None

    def effective_why(self, a: QueuedAllocation, slots: list[Slot]) -> Why | None:
        """Exclusive work is charged whole nodes: its quota is checked again once its nodes are known."""
        return self.quotas.why(a, charge(a, (s.view for s in slots))) if a.exclusive and a.project else None

    def occupy(self, a: QueuedAllocation, slots: list[Slot], long: bool = False) -> None:
        """Take the nodes, the quota and the shared resources the placement uses, for the rest of the pass."""
        self.cluster.place(a, slots, self.now, long=long)
        self.quotas.add(a, charge(a, (s.view for s in slots)))
        self.shared.take(a, long)

    def vacate(self, victim: RunningAllocation) -> None:
        """A preempted victim's quota and shared resources are free again (its nodes were given back already)."""
        nodes = (slot.view for n in victim.node_ids if (slot := self.cluster.by_id.get(n)) is not None)
        self.quotas.remove(victim, charge(victim, nodes))
        self.shared.give_back(victim)

    def place(self, a: QueuedAllocation, p: float, slots: list[Slot]) -> None:
        why = self.effective_why(a, slots)
        if why is not None:
            return self.block(a, why)
        self.occupy(a, slots)
        nodes = tuple(slot.view.id for slot in slots)
        self.d.placements.append(Placement(allocation_id=a.id, node_ids=nodes, priority=p))
        self.d.reasons[a.id] = Why(reason=Reason.READY_TO_SCHEDULE, message="placed", detail={"nodes": list(nodes)})
        self.d.counters.placed += 1

    def preempt(self, a: QueuedAllocation, p: float, c: Candidates) -> Outcome | None:
        if not self.config.preemption_enabled:
            return None
        if self._preemptor is None:   # built on first need: ranking running work costs a CEL run each
            self._preemptor = Preemptor(self.snapshot, self.config, self.now, self.rank)
        outcome = self._preemptor.search(self.cluster, c, a, p, self.held)
        self.d.counters.near_miss_priority_gaps += outcome.near_miss
        self.d.counters.protected_victims += len(outcome.protected)
        if outcome.victims:
            for victim in outcome.victims:
                self.vacate(victim)
            self.record_preemption(a, p, outcome)
        return outcome

    def preempted_text(self, victims: Sequence[RunningAllocation], p: float) -> str:
        """What the preemptor's own events say of its victims: how many, where and why, never which."""
        names = [slot.view.name or n if (slot := self.cluster.by_id.get(n)) else n for v in victims for n in v.node_ids]
        ranked = all(self.rank(v) is not None for v in victims)
        return preempted_text(len(victims), names, p if ranked else None, self.config.preemption_gap)

    def record_preemption(self, a: QueuedAllocation, p: float, outcome: Outcome) -> None:
        self.occupy(a, outcome.slots, long=self.reservation is not None)  # behind a head: keep its share
        victims = outcome.victims
        nodes = tuple(slot.view.id for slot in outcome.slots)
        # the preemptor is often another tenant's: its priority, not its workflow or stage
        victim_texts = tuple(f"Preempted by a higher-priority job (priority {p:g})" for _ in victims)
        self.d.preemptions.append(Preemption(
            preemptor_id=a.id, victim_ids=tuple(v.id for v in victims), node_ids=nodes,
            victim_texts=victim_texts, preemptor_text=self.preempted_text(victims, p)))
        for v, text in zip(victims, victim_texts, strict=True):
            self.d.reasons[v.id] = Why(reason=Reason.PREEMPTED, message=text, detail={"by": a.id})
        self.d.reasons[a.id] = Why(reason=Reason.READY_TO_SCHEDULE, message="placed after preemption",
                                   detail={"nodes": list(nodes), "preempting": [v.id for v in victims]})
        self.d.counters.preempted += 1
        self.d.counters.evictions += len(victims)


def _waiting_text(waiting_on: Dependency) -> str:
    return f"waiting for {', '.join(waiting_on.stages)} to reach {waiting_on.condition}"

