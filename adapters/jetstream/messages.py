"""Stored messages read back: a raw JetStream message as an eventsourcing notification.

Shared by the recorders (pages of the log) and the subscription (its live tail), so neither has to
import the other.
"""

from __future__ import annotations

from urllib.parse import unquote
from uuid import UUID

from eventsourcing.persistence import Notification

from adapters.jetstream.client import RawMsg
from adapters.jetstream.subjects import TRACKING_KIND


def originator_of(msg: RawMsg) -> UUID | str:
    token = unquote(msg.subject.rsplit(".", 1)[1])
    return token if msg.headers.get("Roving-Id-Type") == "str" else UUID(token)


def version_of(msg: RawMsg) -> int:
    return int(msg.headers["Roving-Version"])


def notification_of(msg: RawMsg) -> Notification:
    return Notification(
        id=msg.seq, originator_id=originator_of(msg), originator_version=version_of(msg),
        topic=msg.headers["Roving-Topic"], state=msg.data,
    )


def is_tracking(msg: RawMsg) -> bool:
    return msg.subject.split(".", 3)[2] == TRACKING_KIND
