"""How the log's server says no: its error codes, the failures worth a retry, and the typed errors they become."""

from __future__ import annotations

import asyncio

import msgspec
import nats.errors
import nats.js.errors
from eventsourcing.persistence import OperationalError

WRONG_LAST_SEQUENCE = {10071, 10164}
BATCH_DUPLICATE = 10201
STREAM_NOT_FOUND = 10059
TRANSIENT = (
    asyncio.TimeoutError,
    nats.errors.TimeoutError,
    nats.errors.NoRespondersError,
    nats.errors.ConnectionClosedError,
    nats.errors.ConnectionReconnectingError,
    nats.errors.OutboundBufferLimitError,
    nats.errors.StaleConnectionError,
    nats.js.errors.ServiceUnavailableError,
    # a JetStream publish no stream answered (nats-py's rewording of no responders): a stream without a leader while
    # its servers elect one or regain quorum, or one being made again; it answers once they have
    nats.js.errors.NoStreamResponseError,
)


class LogUnavailable(OperationalError):
    """The connection to the log has been down longer than the grace: fail now, the caller may retry later.

    Not transient on purpose: retry loops (the committer's, the connection's) let it through at once."""


class WrongLastSequence(Exception):
    """An expectation on an aggregate's (or tracker's) last sequence failed: someone wrote first."""


class DuplicateBatch(Exception):
    """The server already holds a message id of this batch: it was committed before."""


class ServerRefused(OperationalError):
    """Any other refusal by the server, with its code. An OperationalError: the store failed the write (a full disk
    refuses an atomic batch as "incomplete", 10176), so callers treat it as the log being unavailable."""

    def __init__(self, err_code: int | None, description: str) -> None:
        super().__init__(f"{description} (err_code {err_code})")
        self.err_code = err_code


def sequence_in(data: bytes) -> int:
    """The stream sequence in a publish's ack, or its refusal as a typed error."""
    if not data:
        raise nats.errors.NoRespondersError
    answer = msgspec.json.decode(data)  # a tenth of json.loads' time; malformed: a ValueError as before
    if "error" in answer:
        error = answer["error"]
        raise refusal(error.get("err_code"), error.get("description", "refused"))
    return int(answer["seq"])


def refusal(code: int | None, description: str) -> Exception:
    if code in WRONG_LAST_SEQUENCE:
        return WrongLastSequence(description)
    if code == BATCH_DUPLICATE:
        return DuplicateBatch(description)
    return ServerRefused(code, description)
