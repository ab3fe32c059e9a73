"""The commits begun in one turn of the log's loop go out to the server in one write, in the order they were
begun, each answered with its own sequence (adapters/jetstream/wire.py)."""

from __future__ import annotations

import asyncio

from nats.js.api import StorageType, StreamConfig

from adapters.jetstream.client import JetStreamClient


async def _one_turn_of_commits(url: str) -> tuple[list[int], list[int | None], list[str]]:
    client = await JetStreamClient.connect(url)
    try:
        await client.js.add_stream(StreamConfig(name="CW", subjects=["cw.>"], storage=StorageType.FILE,
                                                allow_atomic=True))
        transport = client.nc._transport
        real, writes = transport.writelines, []  # type: ignore[union-attr]
        transport.writelines = lambda frames: (writes.append(len(frames)), real(frames))[1]  # type: ignore
        loop = asyncio.get_running_loop()
        answers: list[asyncio.Future] = []
        for n in range(20):  # twenty commits in one turn: seventeen single messages and three batches of three
            answers.append(loop.create_future())
            messages = [(f"cw.{n}.{k}", b"x", {}) for k in range(3 if n % 7 == 3 else 1)]
            client.send(messages, 5, lambda seq, error, answer=answers[-1]: answer.set_result(error or seq))
        sequences = await asyncio.gather(*answers)
        subjects = [(await client.js.get_msg("CW", seq)).subject for seq in range(1, 27)]
        return writes, sequences, subjects
    finally:
        await client.close()


def test_the_commits_of_one_turn_go_out_in_one_write_in_order(nats_url):
    writes, sequences, subjects = asyncio.run(_one_turn_of_commits(nats_url))
    assert 26 in writes, f"writes of {writes} frames"  # was one write a commit
    expected, last = [], 0
    for n in range(20):
        last += 3 if n % 7 == 3 else 1
        expected.append(last)
    assert sequences == expected
    assert subjects == [f"cw.{n}.{k}" for n in range(20) for k in range(3 if n % 7 == 3 else 1)]
