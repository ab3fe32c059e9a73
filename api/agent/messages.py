"""How the agent puts the protocol's messages (domain/agent_protocol.py) on the wire and reads its answers."""

from __future__ import annotations

from typing import Any
from uuid import UUID

import httpx
import msgspec
import structlog

from domain.agent_protocol import Beat, Event, Registered, Report, bounded_reason

log = structlog.get_logger("roving.agent")


def as_json(message: msgspec.Struct) -> dict[str, Any]:
    """A request's keyword arguments for a protocol message: its JSON body, encoded by msgspec."""
    return {"content": msgspec.json.encode(message), "headers": {"Content-Type": "application/json"}}


def report_of(node_id: str | None, allocation_id: str, epoch: int, event: Event, **fields: Any) -> Report:
    """A report of this node (the ids as the control plane gave them: a malformed one is a ValueError here, where
    it was a refusal by the control plane; `reportable` keeps such orders out)."""
    return bounded_reason(Report(node_id=UUID(node_id or ""), allocation_id=UUID(allocation_id), epoch=epoch,
                                 event=event, **fields))


def reportable(allocation_id: Any, epoch: Any, logger: Any = log) -> bool:
    """An order the agent can report on (an allocation id and an epoch as the protocol has them); one that is not
    is logged and left alone, since no report of it could be taken."""
    try:
        UUID(allocation_id)
    except (TypeError, ValueError, AttributeError):
        logger.error("agent.order_unreadable", allocation_id=repr(allocation_id)[:100], epoch=repr(epoch)[:40])
        return False
    if isinstance(epoch, int) and not isinstance(epoch, bool):
        return True
    logger.error("agent.order_unreadable", allocation_id=allocation_id, epoch=repr(epoch)[:40])
    return False


def registered(response: httpx.Response | None) -> Registered | None:
    """The registration's answer; None for a refusal (logged by the caller) or an answer that is none (logged)."""
    if response is None or response.status_code != 200:
        return None
    try:
        return msgspec.json.decode(response.content, type=Registered)
    except msgspec.DecodeError as error:
        log.warning("agent.registration_unreadable", error=str(error), body=response.text[:200])
        return None


def beat_of(response: httpx.Response) -> Beat:
    """A heartbeat's answer (an older control plane's `{"ok": true}`, or one that is none: no bus key)."""
    try:
        return msgspec.json.decode(response.content, type=Beat)
    except msgspec.DecodeError:
        return Beat()
