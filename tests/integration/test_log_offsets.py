"""Reading a stage's log by byte offset on a real nats-server: windows across messages add up to the whole."""

from __future__ import annotations

import asyncio

import nats

from adapters.logs import LogWriter


def test_windows_of_a_log_of_many_messages_add_up_to_the_whole_and_name_its_total(nats_url):
    async def main() -> tuple[bytes, list[tuple[bytes, int]], tuple[bytes, int]]:
        nc = await nats.connect(nats_url)
        writer = await LogWriter(nc.jetstream(), "offsets", flush_interval=3600).start()
        try:
            for i in range(40):  # one message each: alternating streams never coalesce
                writer.append("wf-o", "train", "stdout" if i % 2 else "stderr", f"chunk {i:02}|".encode())
            await writer.flush()
            whole = await writer.read("wf-o", "train")
            windows = [await writer.read_range("wf-o", "train", offset, 7) for offset in range(0, len(whole), 7)]
            tail = await writer.read_range("wf-o", "train", len(whole) - 10)
            assert await writer.read_range("wf-o", "train", -25, 5) == (whole[-25:-20], len(whole))
            return whole, windows, tail
        finally:
            await writer.close()
            await nc.close()

    whole, windows, tail = asyncio.run(main())
    assert len(whole) == 40 * 9
    assert b"".join(data for data, _ in windows) == whole and {total for _, total in windows} == {len(whole)}
    assert tail == (whole[-10:], len(whole))


def test_a_follower_asking_from_its_offset_reads_each_byte_of_a_growing_log_once(nats_url):
    async def main() -> tuple[bytes, bytes, int]:
        nc = await nats.connect(nats_url)
        writer = await LogWriter(nc.jetstream(), "offsets", flush_interval=3600).start()
        try:
            followed, received = bytearray(), 0
            for i in range(30):
                writer.append("wf-g", "train", "stdout", f"step {i} é\n".encode())
                await writer.flush()
                data, total = await writer.read_range("wf-g", "train", len(followed))
                received += len(data)
                followed += data
                assert total == len(followed)
            return bytes(followed), await writer.read("wf-g", "train"), received
        finally:
            await writer.close()
            await nc.close()

    followed, whole, received = asyncio.run(main())
    assert followed == whole and received == len(whole)
