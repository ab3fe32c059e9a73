"""The node agent's loop: register (or resume) this node, keep its lease, run what is placed on it, report."""

from __future__ import annotations

import asyncio
import signal
import time
from pathlib import Path

import httpx
import msgspec
import structlog

from adapters.executor import Executor, RunSpec, SpecError
from adapters.launch import memlock_note
from adapters.log_spool import Spool
from adapters.outbox import Entry, Outbox
from adapters.registry_auth import take_credential
from api.agent.args import AgentConfig
from api.agent.bus import AgentBus
from api.agent.logstream import LOG_WAIT, LogShipping, config_of, spool_key
from api.agent.membership import Membership
from api.agent.messages import as_json, report_of, reportable
from api.agent.metrics import NodeMetrics
from api.agent.node import check_owner
from api.agent.pipe_keeper import keep_pipes
from api.agent.poll import AssignmentFeed, follow
from api.agent.ports import PortWatch, listening_of
from api.agent.progress import ProgressRelay
from api.agent.pulls import ImagePulls
from api.agent.reports import Reporter
from api.agent.serving import watch_service
from api.agent.slots import Slot, adopt_jobs, confirm_adopted, stop_probes
from api.agent.starts import Refused, build_spec
from domain.agent_protocol import Assignments, Config, Event, Report, Start, Stop

log = structlog.get_logger("roving.agent")
OUTBOX_DRAIN_SECONDS = 120.0  # a restarted agent delivers what its predecessor left before registering anew
DETACH = signal.SIGUSR1  # stop, leaving the jobs running for the next agent to adopt (`roving up`'s graceful stop)


class Agent(Membership):
    """The loop: heartbeat, poll assignments, start and stop processes, report with the allocation's epoch.

    Its state on disk (`<workdir>/.roving-agent/`): the outbox of unacknowledged reports, its registration and
    a directory per running job (adapters/adoption.py), so a restarted agent delivers the reports, adopts the
    jobs its predecessor left running under the same registration, and reports their ends."""

    def __init__(self, config: AgentConfig, http: httpx.AsyncClient, executor: Executor, metrics: NodeMetrics):
        super().__init__(config)
        self.config, self.http, self.executor, self.metrics = config, http, executor, metrics
        self.slots: dict[str, Slot] = {}
        self.finished: set[tuple[str, int]] = set()
        self.events: asyncio.Queue = asyncio.Queue()
        self.loop = asyncio.get_running_loop()
        self.log = log.bind(node=config.node)
        state = Path(config.workdir) / ".roving-agent"
        self.unconfirmed: dict[str, int] = {}  # adopted: killed unless the control plane still lists them here
        self.feed = AssignmentFeed(self.call, config.poll_wait)
        self.wake = asyncio.Event()  # set by the executor's and probes' threads: something to drain
        self.bus = AgentBus(lambda: self.node_id, self.wake)
        self.feed.hears = lambda: self.bus.live
        self.reporter = Reporter(Outbox(state / "outbox"), self.call, self._fenced, lambda batch: self.bus.report(batch))
        self.progress = ProgressRelay()
        self.pulls = ImagePulls(self.call, lambda: self.node_id, self.loop)
        self.ports = PortWatch(self.report_ports, config.address)
        self.shipping = LogShipping(Spool(state / "spool"), lambda: str(self.node_id), self.log)

    async def run(self, stop: asyncio.Event, detach: asyncio.Event | None = None) -> None:
        beats = None
        try:
            adopted = self.adopt()
            if unreadable := self.reporter.outbox.unreadable:  # left by a predecessor: no control plane takes them
                self.log.error("agent.outbox_entries_unreadable", entries=unreadable)
            await self.reporter.drain(time.monotonic() + OUTBOX_DRAIN_SECONDS, stop)
            if await self.resume(stop, bool(adopted)):
                await self.watch_adopted(adopted)
            else:
                if adopted:  # the control plane gave them up with the old registration: no copy may run on
                    await self.stop_all("its node registered anew: the allocation was given up", report=False)
                await self.register(stop)
            beats = asyncio.create_task(self.keep_lease(stop))  # never behind a slow poll, report or log stream
            await self.connect_logs()
            await self.follow(stop)
        finally:
            if beats is not None:
                beats.cancel()
                await asyncio.gather(beats, return_exceptions=True)
            if detach is not None and detach.is_set():
                await self.detach()
            else:
                await self.stop_all("agent stopped", report=True)
            await self.shipping.close()
            await self.bus.close()

    def adopt(self) -> list[Slot]:
        """Watch again every job a predecessor on this work directory left (api/agent/slots.adopt_jobs)."""
        return adopt_jobs(self.executor, self.slots, self._forward_output, self._forward_exit, self.log)

    async def watch_adopted(self, adopted: list[Slot]) -> None:
        self.unconfirmed = {slot.spec.allocation_id: slot.spec.epoch for slot in adopted}
        for slot in adopted:
            if slot.spec.kind == "service":
                await self.serve(slot)

    async def connect_logs(self) -> None:
        """Job output (spooled from the start, adopted jobs' too) ships to the log stream the API names."""
        answer = await self.log_config()
        self.executor.images_url = (answer.nats_url if answer else None) or None  # builds, built images: the same
        self.shipping.start(self.log_config)
        self.bus.start(answer)  # the node's work pushed to it (api/agent/bus.py); the poll stays, and goes on meanwhile

    async def log_config(self) -> Config | None:
        """`GET /v4/agent/config`'s answer; None while the control plane cannot be reached."""
        response = await self.call("GET", "/v4/agent/config")
        return None if response is None else config_of(response, self.log)

    async def heartbeat(self, stop: asyncio.Event) -> None:
        self.metrics.refresh(len(self.slots))
        await super().heartbeat(stop)

    async def follow(self, stop: asyncio.Event) -> None:
        """Long-poll the assignments while exits are drained and reports flushed (api/agent/poll.follow)."""
        await follow(self.feed, lambda: self.node_id, self.apply, self._tick, stop, self.wake, self.config.poll)

    async def _tick(self) -> None:
        await self.take_pushed()
        await self.drain()
        await self.ports.check(self.slots)
        if exits := [spool_key(str(body.allocation_id), body.epoch) for body, _ in self.reporter.queued
                     if body.event == "exited"]:
            await self.shipping.settle(LOG_WAIT, exits)  # a FINISHED stage's log is whole when its user reads it
        await self.reporter.flush()

    async def take_pushed(self) -> None:
        """Answers pushed since the last round, applied as a poll's are (in this loop: never amid an exit)."""
        if self.bus.missed:  # pushes may have been lost while it was away: the next poll answers what there is
            self.bus.missed = False
            self.feed.missed()
        await self.bus.follow_node()
        for answer, refused, tag in self.bus.take():
            if self.feed.take(answer, tag):  # not one older than a poll answer applied meanwhile
                await self.apply(answer, refused)

    async def apply(self, answer: Assignments[Start], refused: list[Refused] | None = None) -> None:
        confirm_adopted(self.unconfirmed, self.slots, answer, self.log)  # the first answer after adopting
        self.unconfirmed = {}
        for allocation_id, epoch, reason in self.feed.refused if refused is None else refused:
            if reportable(allocation_id, epoch, self.log) and (allocation_id, epoch) not in self.finished:
                self.cannot_start(allocation_id, epoch, 126, reason)
        for order in answer.stop:
            if slot := self.slots.get(order.allocation_id):
                slot.running.cancel(order.reason or "stopped by the control plane")
            elif order.rank_stop:
                await self.never_started(order)
        for item in answer.start:
            await self.start(item)
        if answer.volumes is not None:  # a control plane that does not say which volumes live on: never "none"
            await self.sweep_volumes(set(answer.volumes))

    async def never_started(self, order: Stop) -> None:
        """A multinode rank told to stop before it ran here still reports its end: its allocation waits for every
        rank's exit (unless this node has run it already and its exit is on its way)."""
        allocation_id, epoch = order.allocation_id, order.epoch
        if (not reportable(allocation_id, epoch, self.log) or (allocation_id, epoch) in self.finished
                or self.reporter.waiting(allocation_id, epoch, "exited")):
            return
        self.finished.add((allocation_id, epoch))
        if order.ranks:  # its share of the log ends too: followers wait for it
            self.shipping.end(allocation_id, epoch, order.workflow_id, order.stage, "not started", ranks=order.ranks)
        self.reporter.queue(self._body(allocation_id, epoch, "exited", exit_code=143,
                                       reason=f"not started: {order.reason}"))

    async def sweep_volumes(self, live: set[str]) -> None:
        """Volumes of workflows that ended go, once none of their stages runs here any more."""
        keep = live | {slot.spec.workflow_id for slot in self.slots.values()}
        if not self.executor.volumes.stale(keep):
            return
        for workflow_id in await asyncio.to_thread(self.executor.volumes.keep_only, keep):
            self.log.info("agent.volumes_removed", workflow_id=workflow_id)

    async def start(self, item: Start) -> None:
        allocation_id, epoch = item.allocation_id, item.epoch
        if (not reportable(allocation_id, epoch, self.log) or allocation_id in self.slots
                or (allocation_id, epoch) in self.finished):
            return
        if self.reporter.waiting(allocation_id, epoch, "exited"):
            return  # it ran here already; the exit is on its way
        try:
            env, image_secret = take_credential(item.env)  # the registry's, never the job's
            if env is not None and "FB_WORKFLOW_TOKEN" in env:  # the job's `roving` reaches the API as we do
                env = {"ROVING_API": self.config.api, **env}
            spec = build_spec(item, env)
            check_owner(self.executor, self.config, spec)
            # off the loop: an image pull takes seconds to minutes, and leases and reports must not wait for it
            running = await asyncio.to_thread(self.executor.start, spec, self._forward_output(spec),
                                              self._forward_exit(spec), image_secret, self.pulls.tell(spec))
        except (msgspec.ValidationError, ValueError, SpecError, OSError) as error:
            self.cannot_start(allocation_id, epoch, 127 if isinstance(error, FileNotFoundError) else 126, str(error))
            return
        slot = self.slots[spec.allocation_id] = Slot(spec, running)
        self.log.debug("agent.started", allocation_id=spec.allocation_id, pid=running.pid)  # the log records starts
        self.report_slot(slot, "started")  # sent with the round's other reports; a fence stops the copy then
        if note := memlock_note(spec.memory_bytes):  # with the attempt's next report: no request or commit of its own
            self.report_slot(slot, "note", reason=note)
        if running.image_note:
            await self.pulls.ready(spec, running.image_note)
        if running.ran_on_host:
            reason = f"image {spec.image} was not used: this node's runtime is host"
            self.report_slot(slot, "ran_on_host", reason=reason)
        await self.serve(slot)

    def cannot_start(self, allocation_id: str, epoch: int, code: int, why: str) -> None:
        self.pulls.relay.forget(allocation_id, epoch)
        self.finished.add((allocation_id, epoch))
        self.metrics.failures.labels("start").inc()
        self.reporter.queue(self._body(allocation_id, epoch, "exited", exit_code=code, reason=f"cannot start: {why}"))

    async def serve(self, slot: Slot) -> None:
        """A service is ready when its probe passes, or at once without one (readiness reports are idempotent)."""
        if slot.spec.kind != "service":
            return
        if watch_service(slot, lambda event: self._threadsafe(self._notify, event),
                         lambda delay, event: self.loop.call_later(delay, self._notify, event)):
            await self.report_ports(slot, await listening_of(slot, self.config.address))

    async def send_progress(self) -> None:
        """Transfers' progress, straight to the API (not through the outbox: the next line supersedes a lost one)."""
        for allocation_id, epoch, text in self.progress.due():
            body = report_of(self.node_id, allocation_id, epoch, "progress", reason=text)
            await self.call("POST", "/v4/agent/reports", **as_json(body))

    async def drain(self) -> None:
        """Handle what the executor and probe threads handed over since the last tick."""
        await self.send_progress()
        while not self.events.empty():
            event, allocation_id, *rest = self.events.get_nowait()
            slot = self.slots.get(allocation_id)
            if slot is None:
                continue
            if event == "ready":
                await self.report_ports(slot, await listening_of(slot, self.config.address))
            elif event == "unready":  # out of its endpoint, still running
                slot.listening = None
                self.report_slot(slot, "unready", reason=rest[0], change=slot.changes)
                slot.changes += 1
            elif event == "exited":
                await self.finish(slot, *rest)

    async def finish(self, slot: Slot, exit_code: int, reason: str) -> None:
        spec = slot.spec
        del self.slots[spec.allocation_id]
        self.finished.add((spec.allocation_id, spec.epoch))
        self.progress.forget(spec.allocation_id, spec.epoch)
        await stop_probes([slot])
        if exit_code != 0:
            self.metrics.failures.labels("exit").inc()
        reason = self.shipping.end(spec.allocation_id, spec.epoch, spec.workflow_id, spec.stage, reason,
                                   ranks=len(spec.peers.hosts) if spec.peers else 1)
        # a failure is the node's news; a success is in the log as the exit's event (a line each is 3% of the agent)
        (self.log.info if exit_code else self.log.debug)("agent.exited", allocation_id=spec.allocation_id,
                                                         exit_code=exit_code, reason=reason)
        if slot.fenced:
            slot.running.release()  # never to be said: the job's state may go
        else:  # the job's state goes once its exit is in the outbox
            self.report_slot(slot, "exited", then=slot.running.release, exit_code=exit_code, reason=reason)

    async def report_ports(self, slot: Slot, listening: list[int]) -> None:
        """Ready (again), naming the ports the service's processes listen on now (sent with the round's others)."""
        slot.listening = listening
        ports = [msgspec.to_builtins(p) for p in slot.spec.ports]  # echoed back as the API sent them
        self.report_slot(slot, "ready", ports=ports, listening=listening, change=slot.changes)
        slot.changes += 1

    def report_slot(self, slot: Slot, event: Event, then=None, **fields) -> None:
        """Queue a report with the slot's epoch: on disk and sent with this round's others (`_tick`)."""
        self.reporter.queue(self._body(slot.spec.allocation_id, slot.spec.epoch, event, **fields), then)

    def _body(self, allocation_id: str, epoch: int, event: Event, exit_code: int | None = None, reason: str = "",
              ports=(), change: int = 0, listening: list[int] | None = None) -> Report:
        return report_of(self.node_id, allocation_id, epoch, event, exit_code=exit_code, reason=reason,
                         ports=list(ports), change=change, listening=listening)

    def _fenced(self, entry: Entry) -> None:
        """The control plane moved past this placement: the copy running here must stop, and say nothing more."""
        slot = self.slots.get(entry.allocation)
        if slot is not None and slot.spec.epoch == entry.key[1] and not slot.fenced:
            slot.fenced = True
            slot.running.cancel(f"fenced: epoch {slot.spec.epoch} is stale")

    async def detach(self) -> None:
        """Leave every job running, its state on disk, for the next agent on this work directory to adopt (as after
        a crash, but with the reports due sent first); its probes stop here and start again in the next agent."""
        await self.drain()
        await stop_probes(self.slots.values())
        for slot in self.slots.values():  # what the jobs write (and end with) while no agent reads waits for the next
            keep_pipes(slot.running.files, self.log)
        await self.reporter.flush(force=True)
        self.log.info("agent.detached", allocations=sorted(self.slots))

    async def stop_all(self, reason: str, report: bool) -> None:
        """Cancel every process and wait for them; their exits are reported only when `report`."""
        for slot in self.slots.values():
            slot.fenced = slot.fenced or not report
            slot.running.cancel(reason)
        for slot in list(self.slots.values()):
            await asyncio.to_thread(slot.running.wait)
        await self.drain()
        await self.reporter.flush(force=True)

    def _forward_output(self, spec: RunSpec):
        def forward(stream: str, chunk: bytes) -> None:
            self.progress.seen(spec, stream, chunk)
            self.shipping.output(spec, stream, chunk)
            self._threadsafe(self.shipping.wake.set)
        return forward

    def _forward_exit(self, spec: RunSpec):
        return lambda code, reason: self._threadsafe(self._notify, ("exited", spec.allocation_id, code, reason))

    def _notify(self, event: tuple) -> None:
        self.events.put_nowait(event)
        self.wake.set()

    def _threadsafe(self, fn, *args) -> None:
        try:
            self.loop.call_soon_threadsafe(fn, *args)
        except RuntimeError:  # the loop already closed: the agent is gone
            pass

