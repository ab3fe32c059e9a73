"""A discrete-event simulator driven by the real decision function: nodes, jobs with runtimes, no server.

Time jumps from event to event (arrival, completion); at each, one scheduling pass runs and its
decisions are applied. A job stops at min(runtime, execute timeout), as the node agent would stop it.
Projects (with their quotas) and the config's shared resources are decided on as the control plane does; the
result keeps the most each project (rolled up) and each shared resource ever held at once.
"""
from __future__ import annotations

import heapq
from datetime import datetime, timedelta

import msgspec

from domain.project_paths import ancestors
from domain.scheduler.config import SchedulerConfig
from domain.scheduler.decisions import Decisions
from domain.scheduler.quotas import charge
from domain.scheduler.schedule import schedule
from domain.scheduler.snapshot import GroupPolicy, NodeView, ProjectLimit, QueuedAllocation, RunningAllocation, Snapshot


class SimJob(msgspec.Struct, frozen=True, kw_only=True):
    """An allocation arriving at its `submitted_at`, which would run `runtime` seconds if left alone."""

    allocation: QueuedAllocation
    runtime: int


class SimResult(msgspec.Struct, kw_only=True):
    started: dict[str, datetime]
    finished: dict[str, datetime]
    predicted_start: dict[str, datetime]
    passes: int
    preemptions: int
    utilization: float
    makespan_seconds: float
    peak_projects: dict[str, dict[str, int]] = {}  # per project (its subtree included), the most held at once
    peak_shared: dict[str, int] = {}

    def wait_seconds(self, job_id: str, submitted: datetime) -> float:
        return (self.started[job_id] - submitted).total_seconds()


class Simulator:
    def __init__(self, nodes: list[NodeView], jobs: list[SimJob], config: SchedulerConfig,
                 policies: tuple[GroupPolicy, ...] = (), projects: tuple[ProjectLimit, ...] = ()):
        self.nodes, self.config, self.policies, self.projects = tuple(nodes), config, policies, projects
        self.by_id = {n.id: n for n in nodes}
        self.jobs = {j.allocation.id: j for j in jobs}
        self.arrivals = sorted(jobs, key=lambda j: (j.allocation.submitted_at, j.allocation.id))
        self.queued: dict[str, QueuedAllocation] = {}
        self.running: dict[str, RunningAllocation] = {}
        self.ends: list[tuple[datetime, str, int]] = []
        self.epoch: dict[str, int] = {}
        self.result = SimResult(started={}, finished={}, predicted_start={}, passes=0, preemptions=0,
                                utilization=0.0, makespan_seconds=0.0)
        self.busy_cpu_seconds = 0.0

    def run(self, max_passes: int = 100_000) -> SimResult:
        if not self.arrivals:
            return self.result
        first = now = self.arrivals[0].allocation.submitted_at
        cursor = 0
        while (cursor < len(self.arrivals) or self.queued or self.running) and self.result.passes < max_passes:
            while cursor < len(self.arrivals) and self.arrivals[cursor].allocation.submitted_at <= now:
                a = self.arrivals[cursor].allocation
                self.queued[a.id] = a
                cursor += 1
            self._finish_until(now)
            self._apply(schedule(self._snapshot(), self.config, now), now)
            self._peaks()
            self.result.passes += 1
            upcoming = [t for t in (self.ends[0][0] if self.ends else None,
                                    self.arrivals[cursor].allocation.submitted_at
                                    if cursor < len(self.arrivals) else None, self._wakeup()) if t is not None]
            if not upcoming:
                break
            now = max(now, min(upcoming))
        total_cpu = sum(n.cpu for n in self.nodes)
        span = max((t for t in self.result.finished.values()), default=first) - first
        self.result.makespan_seconds = span.total_seconds()
        self.result.utilization = self.busy_cpu_seconds / (total_cpu * span.total_seconds()) if span and total_cpu \
            else 0.0
        return self.result

    def _wakeup(self) -> datetime | None:
        """The next moment something other than an arrival or an end happens (domain.scheduler.elastic_sim)."""
        return None

    def _snapshot(self) -> Snapshot:
        return Snapshot(queued=tuple(self.queued.values()), running=tuple(self.running.values()),
                        nodes=self.nodes, group_policies=self.policies, projects=self.projects)

    def _peaks(self) -> None:
        projects: dict[str, dict[str, int]] = {}
        shared: dict[str, int] = {}
        for r in self.running.values():
            amounts = charge(r, (self.by_id[n] for n in r.node_ids))
            for path in ancestors(r.project):
                held = projects.setdefault(path, {})
                for key, value in amounts.items():
                    held[key] = held.get(key, 0) + value
            for name, count in r.shared.items():
                shared[name] = shared.get(name, 0) + count
        for path, held in projects.items():
            peak = self.result.peak_projects.setdefault(path, {})
            for key, value in held.items():
                peak[key] = max(peak.get(key, 0), value)
        for name, count in shared.items():
            self.result.peak_shared[name] = max(self.result.peak_shared.get(name, 0), count)

    def _finish_until(self, now: datetime) -> None:
        while self.ends and self.ends[0][0] <= now:
            at, job_id, epoch = heapq.heappop(self.ends)
            running = self.running.get(job_id)
            if running is None or self.epoch[job_id] != epoch:
                continue
            del self.running[job_id]
            self.result.finished[job_id] = at
            self.busy_cpu_seconds += running.cpu * running.nodes * (at - running.started_at).total_seconds()

    def _apply(self, d: Decisions, now: datetime) -> None:
        if d.reservation is not None and d.reservation.estimated_start is not None:
            self.result.predicted_start.setdefault(d.reservation.allocation_id, d.reservation.estimated_start)
        for p in d.preemptions:
            for victim_id in p.victim_ids:
                self._requeue(victim_id, now)
            self.result.preemptions += 1
            self._start(p.preemptor_id, p.node_ids, now)
        for allocation_id, nodes in d.placed_nodes().items():
            self._start(allocation_id, nodes, now)

    def _requeue(self, victim_id: str, now: datetime) -> None:
        victim = self.running.pop(victim_id)
        self.busy_cpu_seconds += victim.cpu * victim.nodes * (now - victim.started_at).total_seconds()
        self.queued[victim_id] = msgspec.structs.replace(
            self.jobs[victim_id].allocation, preemptions=victim.preemptions + (now,))

    def _start(self, allocation_id: str, node_ids: tuple[str, ...], now: datetime) -> None:
        a = self.queued.pop(allocation_id)
        job = self.jobs[allocation_id]
        limit = job.runtime if a.execute_timeout is None else min(job.runtime, a.execute_timeout)
        deadline = now + timedelta(seconds=a.execute_timeout) if a.execute_timeout is not None else None
        fields = {f: getattr(a, f) for f in a.__struct_fields__}
        self.running[a.id] = RunningAllocation(**fields, node_ids=node_ids, started_at=now, deadline=deadline)
        self.result.started.setdefault(a.id, now)
        self.epoch[a.id] = self.epoch.get(a.id, 0) + 1
        heapq.heappush(self.ends, (now + timedelta(seconds=limit), a.id, self.epoch[a.id]))
