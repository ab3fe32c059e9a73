"""Job logs on a real nats-server: batched appends read back in order, follows stop at the end marker."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import nats
import nats.js.errors
import pytest

from adapters.logs import Logs, LogWriter
from api.agent.args import AgentConfig
from api.agent.main import run_agent
from tests.unit.agent.fake_api import A1, FakeApi


def with_writer(nats_url: str, body: Callable[[LogWriter], Awaitable[object]], cluster: str = "logs-test"):
    """Run `body` with a started writer on a fresh connection, closing both afterwards."""

    async def main():
        nc = await nats.connect(nats_url)
        writer = await LogWriter(nc.jetstream(), cluster, flush_interval=0.02).start()
        try:
            return await body(writer)
        finally:
            await writer.close()
            await nc.close()

    return asyncio.run(main())


def test_chunks_of_a_task_array_stage_read_back_in_the_order_they_were_written(nats_url):
    async def body(writer: LogWriter):
        for i in range(50):
            writer.append("wf-1", "job[3]", "stdout" if i % 2 else "stderr", f"{i},".encode())
        await writer.flush()
        return await writer.read("wf-1", "job[3]"), await writer.read("wf-1", "job[3]", streams=("stdout",))

    both, stdout = with_writer(nats_url, body)
    assert both == "".join(f"{i}," for i in range(50)).encode()
    assert stdout == "".join(f"{i}," for i in range(1, 50, 2)).encode()


def test_subjects_encode_brackets_and_dots_so_stages_never_share_a_log(nats_url):
    async def body(writer: LogWriter):
        writer.append("wf-2", "job[1]", "stdout", b"one")
        writer.append("wf-2", "job[10]", "stdout", b"ten")
        writer.append("wf-2", "a.b", "stdout", b"dotted")
        await writer.flush()
        return [await writer.read("wf-2", s) for s in ("job[1]", "job[10]", "a.b", "a")]

    assert with_writer(nats_url, body) == [b"one", b"ten", b"dotted", b""]
    assert Logs(None, "c1").subject("wf", "job[3]") == "roving_logs.c1.wf.job%5B3%5D"


def test_small_writes_are_coalesced_into_few_messages(nats_url):
    async def body(writer: LogWriter):
        for _ in range(1000):
            writer.append("wf-3", "train", "stdout", b"x" * 10)
        await writer.flush()
        return await writer.count("wf-3", "train"), await writer.read("wf-3", "train")

    count, data = with_writer(nats_url, body)
    assert count == 1 and data == b"x" * 10_000


def test_follow_yields_output_as_it_is_written_and_stops_at_the_end_marker(nats_url):
    async def body(writer: LogWriter):
        writer.append("wf-4", "serve", "stdout", b"before ")
        received: list[bytes] = []

        async def follow():
            async for chunk in writer.follow("wf-4", "serve"):
                received.append(chunk)

        task = asyncio.create_task(follow())
        for _ in range(100):
            if received:
                break
            await asyncio.sleep(0.02)
        writer.append("wf-4", "serve", "stderr", b"after")
        writer.end("wf-4", "serve", "exited with code 0")
        await asyncio.wait_for(task, 5)
        return received

    assert b"".join(with_writer(nats_url, body)) == b"before after"


def test_the_stream_is_file_backed_and_ages_out_after_seven_days(nats_url):
    async def body(writer: LogWriter):
        return await writer.js.stream_info("LOGS_LOGS_TEST")

    info = with_writer(nats_url, body)
    assert info.config.subjects == ["roving_logs.logs-test.>"]
    assert info.config.storage == "file"
    assert info.config.max_age == pytest.approx(7 * 24 * 3600)


def test_the_agent_appends_job_output_to_the_stage_log_and_ends_it(nats_url, tmp_path):
    async def main(api: FakeApi) -> bytes:
        stop = asyncio.Event()
        config = AgentConfig(node="n1", api=api.url, token="tok", cpus=1, memory=2**30, devices={},
                             workdir=tmp_path, heartbeat=0.2, poll=0.05, kill_grace=0.3)
        agent = asyncio.create_task(run_agent(config, stop))
        nc = await nats.connect(nats_url)
        try:
            logs = Logs(nc.jetstream(), "agent-logs")
            chunks = [chunk async for chunk in _follow_when_created(logs)]
        finally:
            stop.set()
            await agent
            await nc.close()
        return b"".join(chunks)

    with FakeApi() as api:
        api.config = {"nats_url": nats_url, "cluster": "agent-logs"}
        api.start = [{"allocation_id": A1, "epoch": 1, "workflow_id": "wf-9", "stage": "job[0]",
                      "script": "echo out; echo err >&2"}]
        output = asyncio.run(asyncio.wait_for(main(api), 10))
    assert sorted(output.splitlines()) == [b"err", b"out"]


async def _follow_when_created(logs: Logs):
    """Wait for the agent to create the stream, then follow the stage to its end marker."""
    while True:
        try:
            await logs.js.stream_info(logs.stream)
            break
        except nats.js.errors.NotFoundError:
            await asyncio.sleep(0.05)
    async for chunk in logs.follow("wf-9", "job[0]"):
        yield chunk


def test_following_a_multinode_job_s_log_waits_for_every_rank_s_end(nats_url):
    async def body(writer: LogWriter):
        received: list[bytes] = []

        async def follow():
            async for chunk in writer.follow("wf-mn", "ranks"):
                received.append(chunk)

        task = asyncio.create_task(follow())
        writer.append("wf-mn", "ranks", "stdout", b"rank 0 done;")
        writer.end("wf-mn", "ranks", "exit 0", ranks=2)
        await writer.flush()
        await asyncio.sleep(0.3)
        still_following = not task.done()
        writer.append("wf-mn", "ranks", "stdout", b"rank 1 done")
        writer.end("wf-mn", "ranks", "exit 0", ranks=2)
        await asyncio.wait_for(task, 5)
        return still_following, received

    still_following, received = with_writer(nats_url, body)
    assert still_following and b"".join(received) == b"rank 0 done;rank 1 done"
