"""The jobs an agent watches (`Slot`), and those a restarted agent adopts from its predecessor: watched again
from their state on disk, then kept only if the control plane still places them here."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from adapters.executor import Executor, Running, RunSpec
from adapters.probes import ProbeRunner
from api.agent.pipe_keeper import release_pipes
from domain.agent_protocol import Assignments, Start


@dataclass
class Slot:
    spec: RunSpec
    running: Running
    probe: ProbeRunner | None = None
    liveness: ProbeRunner | None = None  # watches a service for as long as it runs
    fenced: bool = False
    changes: int = 0  # readiness changes after the first readiness (unready, ready again, ...)
    listening: list[int] | None = None  # the ports its last readiness named; None while not ready (api/agent/ports.py)


def adopt_jobs(executor: Executor, slots: dict[str, Slot], forward_output: Callable[[RunSpec], Any],
               forward_exit: Callable[[RunSpec], Any], log: Any) -> list[Slot]:
    """Watch again every job a predecessor on this work directory left (the ended ones report at once);
    the cgroups no job owns any more are killed and removed."""
    adopted, keep = [], set()
    for files, state in executor.found():
        spec = state.spec
        running = executor.adopt(files, state, forward_output(spec), forward_exit(spec))
        release_pipes(files)  # its output is ours to read now (api/agent/pipe_keeper.py)
        adopted.append(slots.setdefault(spec.allocation_id, Slot(spec, running)))
        keep |= {Path(d).name for d in state.cgroup_dirs.values()}
    if reaped := executor.reap(keep):
        log.warning("agent.killed_leftover_cgroups", cgroups=reaped)
    if adopted:
        log.info("agent.adopting", allocations=sorted(slots))
    return adopted


def confirm_adopted(unconfirmed: dict[str, int], slots: dict[str, Slot], answer: Assignments[Start],
                    log: Any) -> None:
    """The first assignments after adopting: a job the control plane no longer places here is killed, and
    says nothing more (its allocation ended otherwise, or moved)."""
    placed = {(item.allocation_id, item.epoch) for item in answer.start}
    stopping = {order.allocation_id for order in answer.stop}
    for allocation_id, epoch in unconfirmed.items():
        slot = slots.get(allocation_id)
        if slot is not None and (allocation_id, epoch) not in placed and allocation_id not in stopping:
            slot.fenced = True
            slot.running.cancel("no longer placed on this node")
            log.warning("agent.adopted_job_not_placed", allocation_id=allocation_id, epoch=epoch)


async def stop_probes(slots: Iterable[Slot]) -> None:
    """Stop the readiness and liveness probes of these slots (a probe in flight finishes within its timeout)."""
    for slot in slots:
        for probe in (slot.probe, slot.liveness):
            if probe is not None:
                await asyncio.to_thread(probe.stop)
