"""Stored messages read back: a raw JetStream message as an eventsourcing notification.

Shared by the recorders (pages of the log) and the subscription (its live tail), so neither has to
import the other.
"""

from __future__ import annotations

import re
from urllib.parse import unquote
from uuid import UUID, SafeUUID

from eventsourcing.persistence import Notification

from adapters.jetstream.client import RawMsg
from adapters.jetstream.subjects import TRACKING_KIND

_HEX = re.compile("[0-9a-f]{32}")
_UNKNOWN = SafeUUID.unknown


def originator_of(msg: RawMsg) -> UUID | str:
    token = msg.subject[msg.subject.rfind(".") + 1:]
    if msg.headers.get("Roving-Id-Type") == "str":
        return unquote(token)
    return _uuid(token)


def _uuid(text: str) -> UUID:
    """`UUID(text)` for the canonical form our subjects carry, without the constructor's general parsing
    (a tenth of replay's time); anything else goes through the constructor and its errors."""
    digits = text.replace("-", "")
    if len(text) != 36 or len(digits) != 32 or not _HEX.fullmatch(digits):
        return UUID(unquote(text))
    uuid = object.__new__(UUID)
    object.__setattr__(uuid, "int", int(digits, 16))
    object.__setattr__(uuid, "is_safe", _UNKNOWN)
    return uuid


def is_event(msg: RawMsg) -> bool:
    """Whether the control plane wrote `msg` as an event. Anything else on an event subject is passed over by every
    reader: NATS lets any client with a JetStream permission name any reply subject, and the server's own answer
    (a stream's info, a publish's acknowledgement) then lands there, so an agent could put one on any aggregate's
    subject (tests/integration/test_foreign_messages.py)."""
    return "Roving-Topic" in msg.headers and "Roving-Version" in msg.headers


def version_of(msg: RawMsg) -> int:
    return int(msg.headers["Roving-Version"])


def notification_of(msg: RawMsg) -> Notification:
    return Notification(
        id=msg.seq, originator_id=originator_of(msg), originator_version=version_of(msg),
        topic=msg.headers["Roving-Topic"], state=msg.data,
    )


def is_tracking(msg: RawMsg) -> bool:
    return msg.subject.split(".", 3)[2] == TRACKING_KIND
