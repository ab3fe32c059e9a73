"""The simulator with provisioners: the real decision function asks for nodes, which arrive `boot_seconds` later,
and nodes idle for `idle_seconds` are removed, as the provisioner runner would do; no server, time jumps.

It answers what an admin sizing a provisioner asks: how long work waited for nodes, how many were made, and how
many node-seconds were paid for (a node is paid for from its request to its removal).
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

import msgspec

from domain.scheduler.config import SchedulerConfig
from domain.scheduler.decisions import Decisions
from domain.scheduler.simulator import SimJob, SimResult, Simulator
from domain.scheduler.snapshot import GroupPolicy, NodeTemplate, NodeView, PendingNode, Snapshot


class SimProvisioner(msgspec.Struct, frozen=True, kw_only=True):
    template: NodeTemplate    # max_nodes and the shape; `expected_seconds` is what the scheduler believes
    boot_seconds: float       # how long a node really takes to come up
    idle_seconds: float


@dataclass
class Made:
    provisioner: str
    requested_at: datetime
    up_at: datetime | None = None
    idle_since: datetime | None = None


class ElasticSimulator(Simulator):
    def __init__(self, nodes: list[NodeView], jobs: list[SimJob], config: SchedulerConfig,
                 provisioners: list[SimProvisioner], policies: tuple[GroupPolicy, ...] = ()):
        super().__init__(nodes, jobs, config, policies)
        self.provisioners = {p.template.provisioner: p for p in provisioners}
        self.made: dict[str, Made] = {}   # node name -> what it is; removed ones leave
        self.counter = 0
        self.requested = self.canceled = self.removed = 0
        self.node_seconds = self.cpu_seconds = 0.0  # provisioned nodes, from request to removal

    def run(self, max_passes: int = 100_000) -> SimResult:
        """The base result; `utilization` counts the provisioned nodes' cpu for as long as each was paid for."""
        result = super().run(max_passes)
        for m in self.made.values():  # still there when the work ran out: paid for until their idle time is up
            idle = timedelta(seconds=self.provisioners[m.provisioner].idle_seconds)
            self._pay(m, (m.idle_since or m.requested_at) + idle)
        paid = sum(n.cpu for n in self.nodes) * result.makespan_seconds + self.cpu_seconds
        result.utilization = self.busy_cpu_seconds / paid if paid else 0.0
        return result

    def _snapshot(self) -> Snapshot:
        up = tuple(self._view(name, m) for name, m in sorted(self.made.items()) if m.up_at is not None)
        templates = tuple(self._template(p) for p in self.provisioners.values())
        return Snapshot(queued=tuple(self.queued.values()), running=tuple(self.running.values()),
                        nodes=self.nodes + up, group_policies=self.policies, templates=templates)

    def _view(self, name: str, made: Made) -> NodeView:
        t = self.provisioners[made.provisioner].template
        return NodeView(id=name, name=name, definition_id=made.provisioner, cpu=t.cpu, memory=t.memory,
                        devices=dict(t.devices), annotations=dict(t.annotations), segment=t.segment)

    def _template(self, p: SimProvisioner) -> NodeTemplate:
        mine = [(name, m) for name, m in sorted(self.made.items()) if m.provisioner == p.template.provisioner]
        expected = timedelta(seconds=p.template.expected_seconds)
        pending = tuple(PendingNode(request_id=name, state="CREATING", requested_at=m.requested_at,
                                    expected_at=m.requested_at + expected) for name, m in mine if m.up_at is None)
        return msgspec.structs.replace(p.template, nodes=len(mine) - len(pending), pending=pending)

    def _apply(self, d: Decisions, now: datetime) -> None:
        super()._apply(d, now)
        for ask in d.provision:
            for _ in ask.reasons:
                self.counter += 1
                self.made[f"{ask.provisioner}-{self.counter}"] = Made(ask.provisioner, now)
                self.requested += 1
        self._mark_idle(now)

    def _finish_until(self, now: datetime) -> None:
        super()._finish_until(now)
        for name, m in list(self.made.items()):
            p = self.provisioners[m.provisioner]
            if m.up_at is None and m.requested_at + timedelta(seconds=p.boot_seconds) <= now:
                m.up_at, m.idle_since = now, now
            elif m.idle_since is not None and m.idle_since + timedelta(seconds=p.idle_seconds) <= now:
                self._pay(m, m.idle_since + timedelta(seconds=p.idle_seconds))
                del self.made[name]
                self.removed += 1
        self._mark_idle(now)

    def _pay(self, m: Made, until: datetime) -> None:
        seconds = (until - m.requested_at).total_seconds()
        self.node_seconds += seconds
        self.cpu_seconds += seconds * self.provisioners[m.provisioner].template.cpu

    def _mark_idle(self, now: datetime) -> None:
        busy = {n for r in self.running.values() for n in r.node_ids}
        for name, m in self.made.items():
            if m.up_at is not None:
                m.idle_since = None if name in busy else (m.idle_since or now)

    def _wakeup(self) -> datetime | None:
        times = []
        for m in self.made.values():
            p = self.provisioners[m.provisioner]
            if m.up_at is None:
                times.append(m.requested_at + timedelta(seconds=p.boot_seconds))
            elif m.idle_since is not None:
                times.append(m.idle_since + timedelta(seconds=p.idle_seconds))
        return min(times, default=None)
