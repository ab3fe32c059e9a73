"""The agent's job-output stream: the log URL the control plane names (the agent role's credentials), opened
and closed without ever stopping the work (output is optional; running jobs is not)."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import msgspec
import nats

from adapters.logs import LogWriter
from adapters.nats_tls import connect_options
from domain.agent_protocol import Config

LOG_WAIT = 1.0  # seconds an exit report waits, at most, for its stage's log to reach the stream
CLOSE_WAIT = 3.0  # seconds a stopping agent gives its log stream to take what is buffered


def config_of(response: httpx.Response | None, log: Any) -> Config:
    """`GET /v4/agent/config`'s answer; an older API without the route, or an unreadable answer, means no stream."""
    if response is None or response.status_code != 200:
        return Config()
    try:
        return msgspec.json.decode(response.content, type=Config)
    except msgspec.DecodeError as error:
        log.warning("agent.config_unreadable", error=str(error), body=response.text[:200])
        return Config()


async def open_job_logs(answer: Config, log: Any) -> tuple[Any, LogWriter | None]:
    """(connection, writer) for `GET /v4/agent/config`'s answer; (None, None) when there is no stream to reach."""
    if not answer.nats_url:
        log.warning("agent.no_log_stream")
        return None, None

    async def errored(error: Exception) -> None:  # nats-py's default prints a traceback per reconnect attempt
        log.warning("agent.log_stream_error", error=repr(error))

    async def lost() -> None:
        log.warning("agent.log_stream_disconnected")

    try:
        nc = await nats.connect(**connect_options(answer.nats_url), connect_timeout=2, max_reconnect_attempts=-1,
                                error_cb=errored, disconnected_cb=lost)
    except Exception as error:  # noqa: BLE001 - logs are optional; running jobs is not
        log.warning("agent.log_stream_unreachable", error=repr(error))
        return None, None
    return nc, await LogWriter(nc.jetstream(), answer.cluster).start()


async def close_job_logs(writer: LogWriter | None, nc: Any, log: Any) -> None:
    """Job output still buffered goes out if the server is there; a server already gone is no error, and a stream
    that does not answer holds the agent's exit back CLOSE_WAIT at most (a killed `roving up` takes its nats-server
    along: its agents must go too, not wait on a reconnecting client)."""
    try:
        await asyncio.wait_for(_close(writer, nc), CLOSE_WAIT)
    except TimeoutError:  # asyncio's (an OSError, so first); a nats-py timeout inside is its own Error below
        log.warning("agent.log_stream_close_slow", waited_s=CLOSE_WAIT)
    except (OSError, nats.errors.Error) as error:
        log.warning("agent.log_stream_close_failed", error=repr(error))


async def _close(writer: LogWriter | None, nc: Any) -> None:
    if writer is not None:
        await writer.close()
    if nc is not None:
        await nc.close()


async def logs_before_exits(writer: LogWriter | None, exits: bool, log: Any) -> None:
    """A stage's output and end mark reach the log stream before its exit is reported, so a user who reads the log
    of a FINISHED stage reads all of it (the background flush could trail the report by its interval). A slow stream
    holds the exits back LOG_WAIT at most; the flush goes on."""
    if writer is None or not exits or not writer.pending:
        return
    try:
        await asyncio.wait_for(asyncio.shield(writer.flush()), LOG_WAIT)
    except TimeoutError:
        log.warning("agent.log_flush_slow", waited_s=LOG_WAIT)
