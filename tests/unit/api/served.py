"""The API on a real socket, served as `roving up` serves it (`api.http.serving.uvicorn_config`), for one test's loop."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import time
from collections.abc import AsyncIterator
from typing import Any

import uvicorn

from api.composition.settings import load_settings
from api.http.serving import uvicorn_config


@contextlib.asynccontextmanager
async def serving(app: Any, env: dict[str, str] | None = None) -> AsyncIterator[int]:
    """Serve `app` with the settings `env` gives on a free loopback port; yields the port."""
    settings = load_settings(env or {})
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn_config(app, settings, timeout_graceful_shutdown=1))
    task = asyncio.create_task(server.serve(sockets=[sock]))
    try:
        while not server.started:
            if task.done():
                task.result()
            await asyncio.sleep(0.01)
        yield sock.getsockname()[1]
    finally:
        server.should_exit = True
        await task
        sock.close()


async def trickle(port: int, first: bytes, then: bytes, every: float, for_at_most: float) -> tuple[bytes, float]:
    """Send `first`, then `then` a byte at a time every `every` seconds; return what the server said and when it
    closed (seconds from the start), or what it said by `for_at_most` if it never did."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    started, answer = time.monotonic(), b""
    writer.write(first)
    try:
        for byte in then:
            await writer.drain()
            try:
                answer += await asyncio.wait_for(reader.read(4096), every)
            except TimeoutError:
                pass
            if reader.at_eof() or time.monotonic() - started > for_at_most:
                break
            writer.write(bytes([byte]))
        else:
            answer += await asyncio.wait_for(reader.read(4096), for_at_most)
    except ConnectionError:
        pass
    finally:
        writer.close()
    return answer, time.monotonic() - started
