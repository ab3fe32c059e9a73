"""A job's output is never dropped: spooled on the node, shipped whole and once, through bursts, a frozen or
stopped log, and an agent restart (a real nats-server and the real agent; the control plane is the fake API)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from collections.abc import AsyncIterator
from pathlib import Path

import nats
import nats.js.errors

from adapters.log_shipper import Shipper
from adapters.log_spool import Meta, Spool
from adapters.logs import Logs
from adapters.nats_server import NatsServer
from api.agent.args import AgentConfig
from api.agent.main import run_agent
from tests.unit.agent.fake_api import A1, FakeApi, wire

MB = 1_000_000
BURSTS = 'for i in $(seq {n}); do head -c {size} /dev/zero | tr "\\0" x; sleep 0.05; done; echo; echo "last line"'


def agent_config(api: FakeApi, workdir: Path) -> AgentConfig:
    return AgentConfig(node="n1", api=api.url, token="tok", cpus=1, memory=2**30, devices={}, workdir=workdir,
                       heartbeat=0.2, poll=0.05, kill_grace=0.3)


@contextlib.asynccontextmanager
async def ensured_logs(url: str, cluster: str) -> AsyncIterator[Logs]:
    """The cluster's log streams on a connection of their own (made by whoever comes first), closed after."""
    nc = await nats.connect(url)
    try:
        logs = Logs(nc.jetstream(), cluster)
        await logs.ensure()
        yield logs
    finally:
        await nc.close()


async def whole_log(url: str, cluster: str, workflow_id: str, stage: str, timeout: float) -> bytes:
    """The stage's log once its end marker is in the stream."""
    async with ensured_logs(url, cluster) as logs:
        chunks = []
        async with asyncio.timeout(timeout):
            async for chunk in logs.follow(workflow_id, stage):
                chunks.append(chunk)
        return b"".join(chunks)


async def stream_exists(url: str, name: str) -> bool:
    nc = await nats.connect(url)
    try:
        await nc.jetstream().stream_info(name)
        return True
    except nats.js.errors.NotFoundError:
        return False
    finally:
        await nc.close()


def run_job(api: FakeApi, workdir: Path, script: str, url: str, cluster: str, timeout: float,
            during=None) -> bytes:
    """Run one job on a real agent and read its whole log; `during(agent_task)` runs alongside (may restart it)."""
    api.config = {"nats_url": url, "cluster": cluster}
    api.start = [wire(A1, workflow_id="wf-s", stage="train", script=script)] if script else []

    async def main() -> bytes:
        stop = asyncio.Event()
        agent = asyncio.create_task(run_agent(agent_config(api, workdir), stop))
        side = asyncio.create_task(during()) if during else None
        try:
            return await whole_log(url, cluster, "wf-s", "train", timeout)
        finally:
            if side is not None:
                await side
            stop.set()
            await agent

    return asyncio.run(main())


def test_100_mb_written_in_bursts_reaches_the_stage_log_whole_with_its_last_line(nats_url, tmp_path):
    began = time.monotonic()
    with FakeApi() as api:
        log = run_job(api, tmp_path, BURSTS.format(n=20, size=5 * MB), nats_url, "spool-burst", timeout=240)
    seconds = time.monotonic() - began
    assert len(log) == 100 * MB + len(b"\nlast line\n"), f"{len(log)} bytes in {seconds:.1f} s"
    assert log.endswith(b"x\nlast line\n") and log.count(b"x") == 100 * MB


def test_output_written_while_the_log_stream_is_frozen_arrives_in_order_once(tmp_path):
    server = NatsServer(tmp_path / "nats").start()
    assert server.process is not None
    script = 'for i in $(seq 1 30); do echo "line $i"; sleep 0.1; done'

    async def freeze() -> None:
        await asyncio.sleep(0.5)
        os.kill(server.process.pid, signal.SIGSTOP)  # a log that takes nothing and answers nothing
        await asyncio.sleep(6)
        os.kill(server.process.pid, signal.SIGCONT)

    try:
        with FakeApi() as api:
            log = run_job(api, tmp_path / "work", script, server.url, "spool-frozen", timeout=60, during=freeze)
    finally:
        os.kill(server.process.pid, signal.SIGCONT)
        server.stop()
    assert log.decode().splitlines() == [f"line {i}" for i in range(1, 31)]


def test_output_spooled_while_the_log_is_stopped_ships_once_when_it_returns_to_a_restarted_agent(tmp_path):
    server = NatsServer(tmp_path / "nats").start()
    url, workdir = server.url, tmp_path / "work"
    server.stop()  # the log is away for the job's whole life and the first agent's
    with FakeApi() as api:
        api.config = {"nats_url": url, "cluster": "spool-away"}
        api.start = [wire(A1, workflow_id="wf-s", stage="train", script='echo "written while away"')]

        async def first_agent() -> None:
            stop = asyncio.Event()
            agent = asyncio.create_task(run_agent(agent_config(api, workdir), stop))
            while not any(r["event"] == "exited" for r in api.reports):
                await asyncio.sleep(0.05)
            stop.set()
            await agent

        asyncio.run(asyncio.wait_for(first_agent(), 30))
        assert any((workdir / ".roving-agent" / "spool").iterdir()), "the output waits on the node's disk"
        server.start()
        api.start = []
        try:
            log = run_job(api, workdir, "", url, "spool-away", timeout=30)
        finally:
            server.stop()
    assert log == b"written while away\n"
    assert not any((workdir / ".roving-agent" / "spool").iterdir()), "a shipped spool leaves the disk"


def test_a_message_whose_ack_was_lost_is_stored_once_when_it_is_sent_again(nats_url, tmp_path):
    async def main() -> tuple[int, bytes]:
        async with ensured_logs(nats_url, "spool-dup") as logs:
            spool = Spool(tmp_path / "spool")
            stage = spool.stage("a.1", Meta("wf-d", "train"))
            stage.append(b"o", b"first ")
            await Shipper(logs, spool, lambda: "node").ship()
            stage.mark(0, stage.size)  # as if the agent died after the publish, before recording its ack
            stage.append(b"o", b"second")
            await Shipper(logs, Spool(tmp_path / "spool"), lambda: "node").ship()
            return await logs.count("wf-d", "train"), await logs.read("wf-d", "train")

    assert asyncio.run(main()) == (2, b"first second")


def test_an_ended_log_shipped_by_an_agent_that_died_before_removing_its_spool_is_stored_once(nats_url, tmp_path):
    """An ended spool's messages are not marked in flight, nor its last one done: what a restarted agent sends again
    is the same message under the same id."""
    class Dying(Spool):
        def forget(self, stage) -> None:  # the agent died after its last publish, before the spool left the disk
            with self.lock:
                self.stages.pop(stage.key, None)

    async def main() -> tuple[int, bytes, bool]:
        async with ensured_logs(nats_url, "spool-ended") as logs:
            spool = Dying(tmp_path / "spool")
            spool.output("a.1", Meta("wf-e", "train"), "stdout", b"all of it\n")
            spool.end("a.1", Meta("wf-e", "train"), "exited with code 0")
            await Shipper(logs, spool, lambda: "node").ship()
            again = Spool(tmp_path / "spool")
            await Shipper(logs, again, lambda: "node").ship()
            count, text = await logs.count("wf-e", "train"), await logs.read("wf-e", "train")
            return count, text, any((tmp_path / "spool").iterdir())

    assert asyncio.run(main()) == (2, b"all of it\n", False)  # the output and the end, once each; the spool gone


def test_output_a_job_wrote_while_no_agent_watched_it_reaches_the_log_through_the_agent_that_adopts_it(nats_url,
                                                                                                       tmp_path):
    script = 'sleep 1.5; echo "written while no agent watched"'
    with FakeApi() as api:
        api.config = {"nats_url": nats_url, "cluster": "spool-adopt"}
        api.start = [wire(A1, workflow_id="wf-s", stage="train", script=script)]

        async def detaching_agent() -> None:  # `roving up`'s graceful stop: the job runs on, unwatched
            stop, detach = asyncio.Event(), asyncio.Event()
            agent = asyncio.create_task(run_agent(agent_config(api, tmp_path), stop, detach))
            while not any(r["event"] == "started" for r in api.reports):
                await asyncio.sleep(0.05)
            detach.set()
            stop.set()
            await agent
            await asyncio.sleep(2.5)  # the job writes and ends with no agent

        asyncio.run(asyncio.wait_for(detaching_agent(), 30))
        log = run_job(api, tmp_path, "", nats_url, "spool-adopt", timeout=30)
    assert log == b"written while no agent watched\n"


def test_past_the_cluster_s_cap_a_log_ends_with_a_marker_naming_what_was_left_out_and_the_exit_says_so(nats_url,
                                                                                                      tmp_path):
    with FakeApi() as api:
        api.config = {"nats_url": nats_url, "cluster": "spool-cap", "log_max_bytes_per_stage": MB}
        api.start = [wire(A1, workflow_id="wf-s", stage="train", script=BURSTS.format(n=3, size=MB))]

        async def main() -> bytes:
            stop = asyncio.Event()
            agent = asyncio.create_task(run_agent(agent_config(api, tmp_path), stop))
            try:
                return await whole_log(nats_url, "spool-cap", "wf-s", "train", 60)
            finally:
                stop.set()
                await agent

        log = asyncio.run(main())
    left_out = 3 * MB + len(b"\nlast line\n") - MB
    assert log[:MB] == b"x" * MB
    assert log[MB:].decode() == (f"\n[roving: {left_out:,} bytes of output left out of this log: past the cluster's "
                                 f"cap of {MB:,} bytes a stage (logs.maxBytesPerStage)]\n")
    exits = [r["reason"] for r in api.reports if r["event"] == "exited"]
    assert exits == [f"exited with code 0; {left_out:,} bytes of its output were left out of its log (past the "
                     f"cluster's logs.maxBytesPerStage of {MB:,} bytes)"]


def test_a_stage_s_backlog_does_not_hold_back_another_stage_s_log_and_end(nats_url, tmp_path):
    async def main() -> tuple[bool, bool, bytes]:
        async with ensured_logs(nats_url, "spool-fair") as logs:
            spool = Spool(tmp_path / "spool")
            spool.output("big.1", Meta("wf-f", "flood"), "stdout", b"y" * (20 * MB))  # 5 rounds' worth
            spool.output("small.1", Meta("wf-f", "quick"), "stdout", b"quick and done\n")
            spool.end("small.1", Meta("wf-f", "quick"), "exited with code 0")
            shipper = Shipper(logs, spool, lambda: "node")
            await shipper.round()
            state = spool.shipping("small.1"), spool.shipping("big.1")
            return *state, await whole_log(nats_url, "spool-fair", "wf-f", "quick", 10)

    small_waiting, big_waiting, quick = asyncio.run(main())
    assert quick == b"quick and done\n" and not small_waiting and big_waiting


def test_a_log_stream_deleted_under_the_agent_is_made_again_and_the_output_after_it_arrives(nats_url, tmp_path):
    from api.agent.logstream import LogShipping
    from domain.agent_protocol import Config

    class Quiet:
        def __init__(self) -> None:
            self.events: list[str] = []

        def warning(self, event: str, **_: object) -> None:
            self.events.append(event)

    async def main() -> tuple[bytes, list[str]]:
        log = Quiet()
        shipping = LogShipping(Spool(tmp_path / "spool"), lambda: "node", log)

        async def ask() -> Config:
            return Config(nats_url=nats_url, cluster="spool-lost")

        shipping.start(ask)
        shipping.spool.output("a.1", Meta("wf-l", "train"), "stdout", b"before the stream went\n")
        shipping.wake.set()
        while shipping.spool.pending():
            await asyncio.sleep(0.02)
        nc = await nats.connect(nats_url)
        await nc.jetstream().delete_stream("LOGS_SPOOL_LOST")  # NoStreamResponse / no responders from now on
        await nc.close()
        shipping.spool.output("a.1", Meta("wf-l", "train"), "stdout", b"after it came back\n")
        shipping.spool.end("a.1", Meta("wf-l", "train"), "exited with code 0")
        shipping.wake.set()
        try:
            async with asyncio.timeout(30):
                while not await stream_exists(nats_url, "LOGS_SPOOL_LOST"):  # made again by the agent, not us
                    await asyncio.sleep(0.05)
            return await whole_log(nats_url, "spool-lost", "wf-l", "train", 30), log.events
        finally:
            await shipping.close(1)

    log, events = asyncio.run(main())
    assert log == b"after it came back\n" and "agent.log_ship_failed" in events


def test_the_spool_is_readable_by_the_agent_alone(tmp_path):
    spool = Spool(tmp_path / "state" / "spool")
    spool.output("a.1", Meta("wf", "train"), "stdout", b"a tenant's output")
    modes = {path.name: path.stat().st_mode & 0o777 for path in (spool.root, spool.root / "a.1",
                                                                 spool.root / "a.1" / "data")}
    assert modes == {"spool": 0o700, "a.1": 0o700, "data": 0o600}


def test_a_spool_whose_file_was_removed_by_hand_does_not_hold_back_the_others(nats_url, tmp_path):
    async def main() -> tuple[bytes, bool]:
        async with ensured_logs(nats_url, "spool-gone") as logs:
            spool = Spool(tmp_path / "spool")
            spool.output("gone.1", Meta("wf-g", "gone"), "stdout", b"lost by hand")
            spool.output("kept.1", Meta("wf-g", "kept"), "stdout", b"kept\n")
            spool.end("kept.1", Meta("wf-g", "kept"), "exited with code 0")
            (spool.root / "gone.1" / "data").unlink()
            await Shipper(logs, spool, lambda: "node").ship()
            return await whole_log(nats_url, "spool-gone", "wf-g", "kept", 10), spool.shipping("gone.1")

    assert asyncio.run(main()) == (b"kept\n", False)
