"""The agent's job-output shipping: the spool on the node's disk (adapters/log_spool.py) fed by the jobs' reader
threads, and a background task that ships it to the log URL the control plane names (the agent role's
credentials). No failure of the control plane or the stream ends the task or the agent: it waits, the output
stays on disk, and it goes out, in order and once, when they are back."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import httpx
import msgspec
import nats

from adapters.log_shipper import Shipper
from adapters.log_spool import Meta, Spool
from adapters.logs import Logs
from adapters.nats_tls import connect_options
from adapters.runspec import RunSpec
from domain.agent_protocol import Config

LOG_WAIT = 1.0  # seconds an exit report waits, at most, for its stage's log to reach the stream
CLOSE_WAIT = 3.0  # seconds a stopping agent gives its log stream to take what is spooled (the rest waits on disk)
FLUSH = 0.2  # seconds between shipping rounds when no output wakes the shipper sooner
RETRY = (0.2, 5.0)  # seconds between tries after a failure: the first, and the most (doubling in between)
SETTLE_POLL = 0.05  # at most between two looks at what an exit's log still waits for (a pass wakes it sooner)
CONFIG_EVERY = 60.0  # seconds between looks at the cluster's log cap (logs.maxBytesPerStage)
Ask = Callable[[], Awaitable[Config | None]]


def config_of(response: httpx.Response | None, log: Any) -> Config:
    """`GET /v4/agent/config`'s answer; an older API without the route, or an unreadable answer, means no stream."""
    if response is None or response.status_code != 200:
        return Config()
    try:
        return msgspec.json.decode(response.content, type=Config)
    except msgspec.DecodeError as error:
        log.warning("agent.config_unreadable", error=str(error), body=response.text[:200])
        return Config()


def spool_key(allocation_id: str, epoch: int) -> str:
    """One stage attempt's spool (a retry of the stage on this node spools, and ships, apart)."""
    return f"{allocation_id}.{epoch}"


class LogShipping:
    """The spool and the task shipping it."""

    def __init__(self, spool: Spool, node: Callable[[], str], log: Any) -> None:
        self.spool, self.node, self.log = spool, node, log
        self.wake = asyncio.Event()
        self.shipped = asyncio.Event()  # set after each shipping pass: an exit waiting on its log looks again then
        self.nc: Any = None
        self.shipper: Shipper | None = None
        self.ensured = False
        self.task: asyncio.Task | None = None

    def output(self, spec: RunSpec, stream: str, chunk: bytes) -> None:
        """On disk before it returns (a job's reader thread calls it); the shipper is woken."""
        self.spool.output(spool_key(spec.allocation_id, spec.epoch), Meta(spec.workflow_id, spec.stage), stream, chunk)

    def end(self, allocation_id: str, epoch: int, workflow_id: str, stage: str, reason: str, ranks: int = 1) -> str:
        """The stage attempt's log ends here (a multinode rank's: followers wait for every rank's end); the reason
        its exit reports, naming the output left out of its log past the cluster's cap."""
        left_out = self.spool.end(spool_key(allocation_id, epoch), Meta(workflow_id, stage), reason, ranks)
        self.wake.set()
        if not left_out:
            return reason
        return (f"{reason}; {left_out:,} bytes of its output were left out of its log (past the cluster's "
                f"logs.maxBytesPerStage of {self.spool.cap:,} bytes)")

    def start(self, ask: Ask) -> None:
        """Ship in the background; `ask` fetches `GET /v4/agent/config` (None: the control plane is away)."""
        if self.task is None:
            self.task = asyncio.create_task(self._run(ask))

    async def settle(self, seconds: float, keys: list[str] | None = None) -> None:
        """Wait, `seconds` at most, until the stream has taken what is spooled: of the stage attempts `keys` names
        (exits wait on their own logs, not on another job's backlog), or everything."""
        def waiting() -> bool:
            return any(map(self.spool.shipping, keys)) if keys is not None else bool(self.spool.pending())

        if self.shipper is None or not waiting():
            return
        self.wake.set()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + seconds
        while True:
            self.shipped.clear()  # before looking: a pass that ends after this look sets it again (one loop thread)
            if not waiting():
                return
            if (left := deadline - loop.time()) <= 0:
                self.log.warning("agent.log_flush_slow", waited_s=seconds)
                return
            try:  # woken by the pass that shipped it, not a poll's 10 ms later (a trivial job's exit waits on this)
                await asyncio.wait_for(self.shipped.wait(), min(left, SETTLE_POLL))
            except TimeoutError:
                pass

    async def close(self, seconds: float = CLOSE_WAIT) -> None:
        """Give the stream `seconds` to take what is spooled; what it does not take waits on disk for the next agent
        (a killed `roving up` takes its nats-server along: its agents must go too, not wait on it)."""
        await self.settle(seconds)
        if self.task is not None:
            self.task.cancel()
            await asyncio.gather(self.task, return_exceptions=True)
        if self.nc is not None:
            try:
                await asyncio.wait_for(self.nc.close(), seconds)
            except (TimeoutError, OSError, nats.errors.Error) as error:
                self.log.warning("agent.log_stream_close_failed", error=repr(error))

    async def _run(self, ask: Ask) -> None:
        delay, asked = RETRY[0], asyncio.get_running_loop().time()
        while True:
            try:
                if self.shipper is None and not await self._open(ask):
                    return
                if asyncio.get_running_loop().time() - asked > CONFIG_EVERY:  # an admin may change the cap
                    asked = asyncio.get_running_loop().time()
                    self._configure(await ask())
                await self._ship()
                self.shipped.set()
                delay = RETRY[0]
            except Exception as error:  # noqa: BLE001 - every failure waits with the spool on disk, then tries again
                self.log.warning("agent.log_ship_failed", error=repr(error), retry_s=delay)
                self.ensured = False
                await asyncio.sleep(delay)
                delay = min(RETRY[1], delay * 2)
                continue
            self.wake.clear()
            try:
                await asyncio.wait_for(self.wake.wait(), FLUSH)
            except TimeoutError:
                pass

    def _configure(self, answer: Config | None) -> None:
        if answer is not None:
            self.spool.cap = max(0, answer.log_max_bytes_per_stage)

    async def _ship(self) -> None:
        assert self.shipper is not None
        if not self.ensured:  # again after a failure: the stream may have been lost with its server
            await self.shipper.logs.ensure()
            self.ensured = True
        await self.shipper.ship()

    async def _open(self, ask: Ask) -> bool:
        """Connect to the log stream the control plane names; False when it names none (nothing will ship)."""
        answer = await ask()
        if answer is None:
            raise ConnectionError("the control plane did not say where job output goes")
        self._configure(answer)
        if not answer.nats_url:
            self.log.warning("agent.no_log_stream", spooled_bytes=self.spool.on_disk())
            return False

        async def errored(error: Exception) -> None:  # nats-py's default prints a traceback per reconnect attempt
            self.log.warning("agent.log_stream_error", error=repr(error))

        async def lost() -> None:
            self.log.warning("agent.log_stream_disconnected")

        self.nc = await nats.connect(**connect_options(answer.nats_url), connect_timeout=2,
                                     max_reconnect_attempts=-1, error_cb=errored, disconnected_cb=lost)
        self.shipper = Shipper(Logs(self.nc.jetstream(), answer.cluster), self.spool, self.node)
        return True
