"""Publishing within the current turn of the loop: frames written straight to nats-py's transport.

`nc.publish` only queues a frame; nats-py's flusher task writes it a turn later. A commit's frames are
written at once instead, when nothing of nats-py's is queued before them (so nothing is reordered) and the
connection is up; otherwise the caller takes nats-py's own path, which buffers across a reconnect.
"""

from __future__ import annotations

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


def write(nc: Client, frames: list[bytes]) -> None:
    transport = nc._transport
    assert transport is not None, "write only what `writable` allowed"
    transport.writelines(frames)
    nc.stats["out_msgs"] += len(frames)
