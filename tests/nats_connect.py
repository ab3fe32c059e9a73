"""What a client meets connecting to a nats-server: "connected", or the refusal's words (TLS, authorization)."""

from __future__ import annotations

import asyncio

import nats

from adapters.nats_tls import connect_options


async def connect_refusal(url: str) -> str:
    nc = nats.NATS()
    try:
        await nc.connect(**connect_options(url), allow_reconnect=False, max_reconnect_attempts=0, connect_timeout=2)
        return "connected"
    except Exception as error:  # noqa: BLE001 - the refusal is what the test reads
        return str(error)
    finally:
        try:
            await asyncio.wait_for(nc.close(), 2)
        except TimeoutError:
            pass  # nats-py's close hangs after a failed TLS handshake
