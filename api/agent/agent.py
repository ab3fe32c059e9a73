"""The node agent's loop: register (or resume) this node, keep its lease, run what is placed on it, report."""

from __future__ import annotations

import asyncio
import signal
import time
from pathlib import Path
from typing import Any
from uuid import UUID

import httpx
import msgspec
import structlog

from adapters.adoption import Registration, registration_digest
from adapters.executor import Executor, RunSpec, SpecError
from adapters.logs import LogWriter
from adapters.outbox import Entry, Outbox
from adapters.probes import ProbeRunner, liveness
from adapters.registry_auth import take_credential
from api.agent.args import AgentConfig, build_spec
from api.agent.logstream import close_job_logs, open_job_logs
from api.agent.messages import as_json, registered, report_of, reportable
from api.agent.metrics import NodeMetrics
from api.agent.node import check_owner
from api.agent.poll import AssignmentFeed, follow
from api.agent.ports import PortWatch, listening_of
from api.agent.progress import ProgressRelay
from api.agent.pulls import ImagePulls
from api.agent.reports import Reporter
from api.agent.slots import Slot, adopt_jobs, confirm_adopted, stop_probes
from domain.agent_protocol import Assignments, Event, Heartbeat, Register, Report, Stop

log = structlog.get_logger("roving.agent")
OUTBOX_DRAIN_SECONDS = 120.0  # a restarted agent delivers what its predecessor left before registering anew
DETACH = signal.SIGUSR1  # stop, leaving the jobs running for the next agent to adopt (`roving up`'s graceful stop)


class Agent:
    """The loop: heartbeat, poll assignments, start and stop processes, report with the allocation's epoch.

    Its state on disk (`<workdir>/.roving-agent/`): the outbox of unacknowledged reports, its registration and
    a directory per running job (adapters/adoption.py), so a restarted agent delivers the reports, adopts the
    jobs its predecessor left running under the same registration, and reports their ends."""

    def __init__(self, config: AgentConfig, http: httpx.AsyncClient, executor: Executor, metrics: NodeMetrics):
        self.config, self.http, self.executor, self.metrics = config, http, executor, metrics
        self.node_id: str | None = None
        self.epoch = 0
        self.slots: dict[str, Slot] = {}
        self.finished: set[tuple[str, int]] = set()
        self.logs: LogWriter | None = None
        self.events: asyncio.Queue = asyncio.Queue()
        self.loop = asyncio.get_running_loop()
        self.log = log.bind(node=config.node)
        state = Path(config.workdir) / ".roving-agent"
        self.registration = Registration(state / "node.json")
        self.unconfirmed: dict[str, int] = {}  # adopted: killed unless the control plane still lists them here
        self.feed = AssignmentFeed(self.call, config.poll_wait)
        self.wake = asyncio.Event()  # set by the executor's and probes' threads: something to drain
        self.reporter = Reporter(Outbox(state / "outbox"), self.call, self._fenced)
        self.progress = ProgressRelay()
        self.pulls = ImagePulls(self.call, lambda: self.node_id, self.loop)
        self.ports = PortWatch(self.report_ports)

    async def run(self, stop: asyncio.Event, detach: asyncio.Event | None = None) -> None:
        nc = beats = None
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
            nc = await self.connect_logs()
            beats = asyncio.create_task(self.keep_lease(stop))  # never behind a slow poll or report
            await self.follow(stop)
        finally:
            if beats is not None:
                beats.cancel()
                await asyncio.gather(beats, return_exceptions=True)
            if detach is not None and detach.is_set():
                await self.detach()
            else:
                await self.stop_all("agent stopped", report=True)
            await self.close_logs(nc)

    def adopt(self) -> list[Slot]:
        """Watch again every job a predecessor on this work directory left (api/agent/slots.adopt_jobs)."""
        return adopt_jobs(self.executor, self.slots, self._forward_output, self._forward_exit, self.log)

    async def resume(self, stop: asyncio.Event, adopted: bool) -> bool:
        """Carry on under the predecessor's registration when the control plane still holds it (a heartbeat
        with its epoch is accepted); registering anew would give up every allocation placed here, those of jobs
        it adopted and those placed while it was away (a restarted control plane places on a node it still
        holds). With no job to keep, it resumes only a registration of the node as it is now (capacity,
        devices, labels, addresses); a changed node registers anew, so the control plane learns the change."""
        if (saved := self.registration.load()) is None:
            return False
        node_id, epoch, registered = saved
        if not adopted and registered != registration_digest(self.registration_body()):
            return False
        self.node_id, self.epoch = node_id, epoch
        while not stop.is_set():
            response = await self.call("POST", "/v4/agent/heartbeat", **as_json(self.heartbeat_body()))
            if response is not None and response.status_code == 200:
                self.log = log.bind(node=self.config.node, node_id=self.node_id, node_epoch=self.epoch)
                self.log.info("agent.resumed", allocations=sorted(self.slots))
                return True
            if response is not None and response.status_code < 500 and response.status_code != 429:
                self.log.warning("agent.resume_refused", status=response.status_code, body=response.text[:200])
                return False
            await _sleep_or_stop(stop, self.config.heartbeat)
        return False

    async def watch_adopted(self, adopted: list[Slot]) -> None:
        self.unconfirmed = {slot.spec.allocation_id: slot.spec.epoch for slot in adopted}
        for slot in adopted:
            if slot.spec.kind == "service":
                await self.serve(slot)

    def confirm(self, answer: Assignments) -> None:
        """The first assignments after adopting: see api/agent/slots.confirm_adopted."""
        confirm_adopted(self.unconfirmed, self.slots, answer, self.log)
        self.unconfirmed = {}

    async def close_logs(self, nc) -> None:
        await close_job_logs(self.logs, nc, self.log)

    async def call(self, method: str, path: str, **kwargs) -> httpx.Response | None:
        """One API call; None when the API cannot be reached (the loop simply tries again)."""
        try:
            return await self.http.request(method, path, **kwargs)
        except httpx.HTTPError as error:
            self.log.warning("agent.api_unreachable", path=path, error=repr(error))
            return None

    def registration_body(self) -> Register:
        c = self.config
        return Register(name=c.node, cpu=c.cpus, memory=c.memory, devices=c.devices, annotations=c.annotations,
                        definition=c.definition or "", address=c.address, metrics_port=c.metrics_port,
                        segment=c.segment or "")

    def heartbeat_body(self) -> Heartbeat:
        return Heartbeat(node_id=UUID(self.node_id or ""), epoch=self.epoch, running=sorted(self.slots))

    async def register(self, stop: asyncio.Event) -> None:
        c, body = self.config, self.registration_body()
        while not stop.is_set():
            response = await self.call("POST", "/v4/agent/register", **as_json(body))
            if self.own_token_refused(response):
                continue
            answer = registered(response)
            if answer is not None:
                self.node_id, self.epoch = str(answer.node_id), answer.epoch
                if answer.token:  # the node's own credential, revocable by admins, from now on
                    self.http.headers["Authorization"] = f"Bearer {answer.token}"
                self.registration.save(self.node_id, self.epoch, registration_digest(body))
                self.feed.forget()
                self.log = log.bind(node=c.node, node_id=self.node_id, node_epoch=self.epoch)
                self.log.info("agent.registered")
                return
            if response is not None and response.status_code != 200:
                self.log.warning("agent.register_refused", status=response.status_code, body=response.text[:200])
            await _sleep_or_stop(stop, c.heartbeat)

    def own_token_refused(self, response: httpx.Response | None) -> bool:
        """A 401 for the node's own token (expired, or revoked by an admin): back to the bootstrap token, so an
        expired one never strands the node; the control plane refuses a fenced node that token too."""
        bootstrap = f"Bearer {self.config.token}"
        if response is None or response.status_code != 401 or self.http.headers.get("Authorization") == bootstrap:
            return False
        self.log.warning("agent.own_token_refused", reason=response.text[:200])
        self.http.headers["Authorization"] = bootstrap
        return True

    async def connect_logs(self):
        """Job output goes straight to the logs stream the API names; without one, output is dropped."""
        response = await self.call("GET", "/v4/agent/config")
        answer = response.json() if response is not None and response.status_code == 200 else {}
        nc, self.logs = await open_job_logs(answer, self.log)
        self.executor.images_url = answer.get("nats_url") or None  # builds and built images: the same credentials
        return nc

    async def keep_lease(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            await self.heartbeat(stop)
            await _sleep_or_stop(stop, self.config.heartbeat)

    async def heartbeat(self, stop: asyncio.Event) -> None:
        self.metrics.refresh(len(self.slots))
        response = await self.call("POST", "/v4/agent/heartbeat", **as_json(self.heartbeat_body()))
        self.own_token_refused(response)
        if response is not None and response.status_code == 409:
            self.log.warning("agent.stale_epoch", reason=response.text[:200])
            await self.stop_all(f"node epoch {self.epoch} is stale", report=False)
            await self.register(stop)

    async def follow(self, stop: asyncio.Event) -> None:
        """Long-poll the assignments while exits are drained and reports flushed (api/agent/poll.follow)."""
        await follow(self.feed, lambda: self.node_id, self.apply, self._tick, stop, self.wake, self.config.poll)

    async def _tick(self) -> None:
        await self.drain()
        await self.ports.check(self.slots)
        await self.reporter.flush()

    async def apply(self, answer: Assignments) -> None:
        self.confirm(answer)
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
        if self.logs is not None and order.ranks:  # its share of the log ends too: followers wait for it
            self.logs.end(order.workflow_id, order.stage, "not started", ranks=order.ranks)
        self.reporter.queue(self._body(allocation_id, epoch, "exited", exit_code=143,
                                       reason=f"not started: {order.reason}"))

    async def sweep_volumes(self, live: set[str]) -> None:
        """Volumes of workflows that ended go, once none of their stages runs here any more."""
        keep = live | {slot.spec.workflow_id for slot in self.slots.values()}
        for workflow_id in await asyncio.to_thread(self.executor.volumes.keep_only, keep):
            self.log.info("agent.volumes_removed", workflow_id=workflow_id)

    async def start(self, item: dict[str, Any]) -> None:
        allocation_id, epoch = item.get("allocation_id", ""), item.get("epoch", 0)
        if (not reportable(allocation_id, epoch, self.log) or allocation_id in self.slots
                or (allocation_id, epoch) in self.finished):
            return
        if self.reporter.waiting(allocation_id, epoch, "exited"):
            return  # it ran here already; the exit is on its way
        try:
            env, image_secret = take_credential(item.get("env"))  # the registry's, never the job's
            if isinstance(env, dict) and "FB_WORKFLOW_TOKEN" in env:  # the job's `roving` reaches the API as we do
                env = {"ROVING_API": self.config.api, **env}
            spec = build_spec({**item, "env": env})
            check_owner(self.executor, self.config, spec)
            # off the loop: an image pull takes seconds to minutes, and leases and reports must not wait for it
            running = await asyncio.to_thread(self.executor.start, spec, self._forward_output(spec),
                                              self._forward_exit(spec), image_secret, self.pulls.tell(spec))
        except (msgspec.ValidationError, ValueError, SpecError, OSError) as error:
            self.pulls.relay.forget(allocation_id, epoch)
            self.finished.add((allocation_id, epoch))
            self.metrics.failures.labels("start").inc()
            code = 127 if isinstance(error, FileNotFoundError) else 126
            self.reporter.queue(self._body(allocation_id, epoch, "exited", exit_code=code, reason=f"cannot start: {error}"))
            return
        slot = self.slots[spec.allocation_id] = Slot(spec, running)
        self.log.info("agent.started", allocation_id=spec.allocation_id, pid=running.pid)
        self.report_slot(slot, "started")  # sent with the round's other reports; a fence stops the copy then
        if running.image_note:
            await self.pulls.ready(spec, running.image_note)
        if running.ran_on_host:
            reason = f"image {spec.image} was not used: this node's runtime is host"
            self.report_slot(slot, "ran_on_host", reason=reason)
        await self.serve(slot)

    async def serve(self, slot: Slot) -> None:
        """A service is ready when its probe passes, or at once without one (readiness reports are idempotent)."""
        spec, running = slot.spec, slot.running
        delay = spec.start_delay_seconds  # a restarted service's backoff: not ready before it starts again
        if spec.kind == "service" and spec.readiness_probe is not None:
            probe = spec.readiness_probe
            if delay:
                probe = msgspec.structs.replace(probe, initial_delay_seconds=(probe.initial_delay_seconds or 0) + delay)
            slot.probe = ProbeRunner(
                probe, lambda: self._threadsafe(self._notify, ("ready", spec.allocation_id)),
                lambda why: running.cancel(why), cwd=running.workdir,
                on_unready=lambda why: self._threadsafe(self._notify, ("unready", spec.allocation_id, why)),
            ).start()
        elif spec.kind == "service" and delay:
            self.loop.call_later(delay, self._notify, ("ready", spec.allocation_id))
        elif spec.kind == "service":
            await self.report_ports(slot, await listening_of(slot))
        if spec.kind == "service" and spec.liveness_probe is not None:
            self.watch_liveness(slot, spec.liveness_probe, delay)

    @staticmethod
    def watch_liveness(slot: Slot, watched: Any, delay: float) -> None:
        """A hung service (its liveness probe failing in a row) is killed; the exit's reason names the probe."""
        if delay:
            watched = msgspec.structs.replace(watched, initial_delay_seconds=(watched.initial_delay_seconds or 0) + delay)
        running = slot.running
        slot.liveness = liveness(watched, lambda why: running.cancel(why), cwd=running.workdir).start()

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
                await self.report_ports(slot, await listening_of(slot))
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
        if self.logs is not None:
            self.logs.end(spec.workflow_id, spec.stage, reason, ranks=len(spec.peers.hosts) if spec.peers else 1)
        self.log.info("agent.exited", allocation_id=spec.allocation_id, exit_code=exit_code, reason=reason)
        if slot.fenced:
            slot.running.release()  # never to be said: the job's state may go
        else:  # the job's state goes once its exit is in the outbox
            self.report_slot(slot, "exited", then=slot.running.release, exit_code=exit_code, reason=reason)

    async def report_ports(self, slot: Slot, listening: list[int]) -> None:
        """Ready (again), naming the ports the service's processes listen on now (sent with the round's others)."""
        slot.listening = listening
        self.report_slot(slot, "ready", ports=slot.spec.ports, listening=listening, change=slot.changes)
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
            if self.logs is not None:
                self._threadsafe(self.logs.append, spec.workflow_id, spec.stage, stream, chunk)
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


async def _sleep_or_stop(stop: asyncio.Event, seconds: float) -> None:
    try:
        await asyncio.wait_for(stop.wait(), seconds)
    except TimeoutError:
        pass
