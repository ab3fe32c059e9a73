"""What one commit costs the nats-server: the CPU it spends per atomic batch on a file stream (as Roving's log
is) against the same batch on a memory stream and the same messages published one by one. Prints one JSON line.

A submit of a five-job workflow is one atomic batch of 16 messages (its six aggregates' events). On a file
stream with one replica, the server stages every batch in a file store of its own (a directory, files and
their removal), so the cost per batch is mostly fixed; a memory stream stages it in memory. `file_batch_staged`
is the file stream with its staging in memory, as `roving up` runs its own server (adapters/batch_staging.py).
CPU is read from /proc (Linux only). Usage: python ops/bench/batch_cost.py [BATCHES] [MESSAGES_PER_BATCH]
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import tempfile
import time
import uuid
from pathlib import Path

import nats
from nats.js.api import StorageType, StreamConfig

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from procstat import cpu_seconds  # noqa: E402 - ops/bench, beside this file

from adapters.batch_staging import BatchStaging, memory_dir  # noqa: E402
from adapters.nats_server import NatsServer  # noqa: E402

PAYLOAD = b"x" * 300  # about the size of a Roving event


async def batches(js, nc, stream: str, count: int, size: int) -> None:
    """Atomic batches, one at a time, each awaited for its commit ack (as a commit is)."""
    inbox = nc.new_inbox()
    acks = await nc.subscribe(inbox + ".>")
    for n in range(count):
        batch = uuid.uuid4().hex
        for k in range(size):
            headers = {"Nats-Batch-Id": batch, "Nats-Batch-Sequence": str(k + 1), "Nats-Msg-Id": uuid.uuid4().hex}
            if k == size - 1:
                headers["Nats-Batch-Commit"] = "1"
            await nc.publish(f"{stream}.e.{uuid.uuid4()}", PAYLOAD, headers=headers,
                             reply=f"{inbox}.{n}" if k == size - 1 else "")
        ack = json.loads((await acks.next_msg(timeout=10)).data)
        if "error" in ack:
            raise SystemExit(f"batch refused: {ack}")
    await acks.unsubscribe()


async def singles(js, nc, stream: str, count: int, size: int) -> None:
    """The same messages as plain publishes, pipelined per group (no atomicity)."""
    for _ in range(count):
        pending = [await js.publish_async(f"{stream}.e.{uuid.uuid4()}", PAYLOAD,
                                          headers={"Nats-Msg-Id": uuid.uuid4().hex}) for _ in range(size)]
        await asyncio.gather(*pending)


async def measure(url: str, pid: int, count: int, size: int, staging: BatchStaging | None) -> dict[str, float]:
    nc = await nats.connect(url)
    js = nc.jetstream()
    figures: dict[str, float] = {}
    for label, storage, write in (("file_batch", StorageType.FILE, batches),
                                  ("file_batch_staged", StorageType.FILE, batches),
                                  ("memory_batch", StorageType.MEMORY, batches),
                                  ("file_singles", StorageType.FILE, singles)):
        if label == "file_batch_staged" and staging is None:
            continue
        stream = f"B{uuid.uuid4().hex[:8]}"
        await js.add_stream(StreamConfig(name=stream, subjects=[f"{stream}.>"], storage=storage,
                                         allow_atomic=True, duplicate_window=120.0))
        if label == "file_batch_staged" and staging is not None:
            staging.tend()
        cpu, started = cpu_seconds(pid), time.perf_counter()
        await write(js, nc, stream, count, size)
        figures[f"{label}_server_cpu_ms"] = round((cpu_seconds(pid) - cpu) * 1000 / count, 3)
        figures[f"{label}_per_s"] = round(count / (time.perf_counter() - started))
    await nc.close()
    return figures


def main(count: int, size: int) -> dict:
    with tempfile.TemporaryDirectory() as scratch, NatsServer(Path(scratch) / "nats") as server:
        memory = memory_dir()
        staging = BatchStaging(server.store_dir, memory) if memory is not None else None
        figures = asyncio.run(measure(server.url, server.process.pid, count, size, staging))
    return {"bench": "batch_cost", "batches": count, "messages_per_batch": size, **figures,
            "file_vs_memory_batch_cpu_ratio": round(figures["file_batch_server_cpu_ms"]
                                                    / max(figures["memory_batch_server_cpu_ms"], 1e-9), 2),
            "cpu_cores": os.cpu_count()}


if __name__ == "__main__":
    args = [int(a) for a in sys.argv[1:3]]
    print(json.dumps(main(*(args + [1000, 16][len(args):]))))
