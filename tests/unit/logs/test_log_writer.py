"""The log writer's queue: concurrent flushes and appends made mid-publish lose and duplicate nothing."""

from __future__ import annotations

import asyncio

from adapters.logs import STREAM_HEADER, LogWriter


class SlowStream:
    """A JetStream stand-in whose publish yields to the loop, as a real round trip does."""

    def __init__(self) -> None:
        self.published: list[tuple[str, bytes]] = []

    async def publish(self, subject: str, payload: bytes, headers: dict[str, str]) -> None:
        await asyncio.sleep(0)
        self.published.append((headers.get(STREAM_HEADER, ""), payload))


def written(js: SlowStream) -> bytes:
    return b"".join(payload for _, payload in js.published)


def test_two_flushes_at_once_send_each_chunk_exactly_once():
    async def main() -> SlowStream:
        js = SlowStream()
        writer = LogWriter(js, "c1")
        for i in range(50):
            writer.append("wf", "job[3]", "stdout" if i % 2 else "stderr", f"{i},".encode())
        await asyncio.gather(writer.flush(), writer.flush())
        return js

    assert written(asyncio.run(main())) == "".join(f"{i}," for i in range(50)).encode()


def test_output_appended_while_its_message_is_on_the_wire_is_kept():
    async def main() -> SlowStream:
        js = SlowStream()
        writer = LogWriter(js, "c1")
        writer.append("wf", "train", "stdout", b"first ")
        flushing = asyncio.create_task(writer.flush())
        await asyncio.sleep(0)  # the flush has taken the message and is awaiting the server
        writer.append("wf", "train", "stdout", b"second")
        await flushing
        await writer.flush()
        return js

    assert written(asyncio.run(main())) == b"first second"


def test_the_log_stream_is_made_with_the_replicas_the_event_log_is_configured_with(monkeypatch):
    monkeypatch.setenv("ROVING_NATS_REPLICAS", "3")
    assert LogWriter(SlowStream(), "c1").replicas == 3
    monkeypatch.delenv("ROVING_NATS_REPLICAS")
    assert LogWriter(SlowStream(), "c1").replicas == 1
