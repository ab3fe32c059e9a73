"""Closing the log connection never raises, even when nats-py's close ends cancelled (its server just died and
its own reconnect was under way), and the loop thread stops either way."""

from __future__ import annotations

import asyncio

from adapters.jetstream.connection import Connection
from adapters.jetstream.loop import LoopThread


class CancelledOnClose:
    async def close(self) -> None:
        raise asyncio.CancelledError()


def test_a_connection_whose_close_is_cancelled_still_closes_quietly():
    connection = Connection.__new__(Connection)  # no server: only the closing is under test
    connection.loop, connection.client, connection._closed = LoopThread(), CancelledOnClose(), False
    connection.close()
    assert connection.loop.loop.is_closed()
    connection.close()  # and again: idempotent
