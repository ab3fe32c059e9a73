"""The msgspec transcoder round-trips every value type our events carry."""

from datetime import UTC, datetime
from decimal import Decimal
from enum import Enum
from uuid import uuid4

import msgspec
import pytest
from eventsourcing.persistence import Transcoding

from adapters.transcoder import MsgspecTranscoder


class Effect(Enum):
    CORDON = "cordon"


class Hold(msgspec.Struct, frozen=True):
    id: str
    effect: Effect
    at: datetime


class Point:
    def __init__(self, x: int) -> None:
        self.x = x

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Point) and other.x == self.x


class PointAsInt(Transcoding):
    type = Point
    name = "point"

    def encode(self, obj: Point) -> int:
        return obj.x

    def decode(self, data: int) -> Point:
        return Point(data)


def test_typed_values_come_back_as_they_went_in():
    now = datetime.now(UTC)
    state = {
        "id": uuid4(), "at": now, "amount": Decimal("10.50"), "effect": Effect.CORDON,
        "hold": Hold("h1", Effect.CORDON, now), "pair": (1, "a"), "naive": datetime(2026, 1, 2, 3, 4),
        "nested": [{"id": uuid4(), "effect": Effect.CORDON}], "plain": {"a": [1, 2.5, None, True]},
    }
    transcoder = MsgspecTranscoder()
    assert transcoder.decode(transcoder.encode(state)) == state


def test_registered_transcodings_carry_custom_types():
    transcoder = MsgspecTranscoder()
    transcoder.register(PointAsInt())
    assert transcoder.decode(transcoder.encode({"p": Point(3)})) == {"p": Point(3)}


def test_an_unknown_type_is_refused_by_name():
    with pytest.raises(TypeError, match="Point"):
        MsgspecTranscoder().encode({"p": Point(3)})
