"""Publishing within the loop's turn: frames written straight to nats-py's transport, all of a turn in one write.

`nc.publish` only queues a frame; nats-py's flusher task writes it a turn later. A commit's frames go out in
this turn instead, when nothing of nats-py's is queued before them (so nothing is reordered) and the connection
is up; otherwise the caller takes nats-py's own path, which buffers across a reconnect. The commits of one turn
(those a drain of the loop's callers begins, or the next sends the acks of one read release) are gathered and
written together at its end: one system call and one wake-up of the server, not one per commit.
"""

from __future__ import annotations

import asyncio

from nats.aio.client import Client
from nats.protocol.command import hpub_cmd

_NEWLINES = str.maketrans({"\r": " ", "\n": " "})


def frame(subject: str, reply: str, headers: dict[str, str], payload: bytes) -> bytes:
    """One HPUB frame. Header names are ours (tokens); values are trimmed and kept on one line, as nats-py
    does."""
    block = "NATS/1.0\r\n" + "".join(
        f"{name}: {value.strip().translate(_NEWLINES)}\r\n" for name, value in headers.items()) + "\r\n"
    return hpub_cmd(subject, reply, block.encode(), payload)


def writable(nc: Client, payloads: list[bytes]) -> bool:
    """Frames may go out now: connected, nothing of nats-py's waiting to be flushed, every payload allowed."""
    if not nc.is_connected or nc._pending or nc._transport is None:
        return False
    limit = nc.max_payload
    return all(len(payload) <= limit for payload in payloads)


class Outgoing:
    """The frames of one connection's turn, written together when the turn's other callbacks have run."""

    def __init__(self, nc: Client) -> None:
        self.nc = nc
        self.frames: list[bytes] = []

    def write(self, frames: list[bytes]) -> None:
        """Only what `writable` allowed, on the loop."""
        if not self.frames:
            asyncio.get_running_loop().call_soon(self.flush)
        self.frames.extend(frames)

    def flush(self) -> None:
        frames, self.frames = self.frames, []
        nc = self.nc
        if nc.is_connected and nc._transport is not None:
            nc._transport.writelines(frames)
        else:  # dropped during the turn: nats-py writes its buffer once reconnected, these first (they came first)
            nc._pending[0:0] = frames
            nc._pending_data_size += sum(len(f) for f in frames)
        nc.stats["out_msgs"] += len(frames)
