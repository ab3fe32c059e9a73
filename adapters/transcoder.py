"""A msgspec MessagePack transcoder for eventsourcing: typed values round-trip through ext types.

Stored event state is MessagePack. Besides msgpack's own types, these come back as they went in:
UUID (ext 1), Decimal (ext 2), Enum members (ext 3), msgspec Structs (ext 4), values of any
registered eventsourcing Transcoding (ext 5), tz-aware datetimes (msgpack's timestamp ext -1, read
back in UTC), and tuples (ext 6). Other languages read the ext payloads as documented in README.md.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from enum import Enum
from typing import Any
from uuid import UUID

import msgspec
from eventsourcing.persistence import JSONTranscoder, Transcoding
from eventsourcing.utils import get_topic, resolve_topic

EXT_UUID, EXT_DECIMAL, EXT_ENUM, EXT_STRUCT, EXT_CUSTOM, EXT_TUPLE, EXT_NAIVE = 1, 2, 3, 4, 5, 6, 7


NATIVE = frozenset({"uuid_hex", "decimal_str", "datetime_iso"})


class MsgspecTranscoder(JSONTranscoder):
    """Faster than eventsourcing's JSONTranscoder and exact for the types our events use.

    It subclasses JSONTranscoder only so that Applications register their custom Transcodings
    on it (eventsourcing does that for JSONTranscoder instances); none of JSON is used.
    """

    def __init__(self) -> None:  # noqa: D107 - JSONTranscoder's JSON machinery is deliberately not set up
        self._by_type: dict[type, Transcoding] = {}
        self._by_name: dict[str, Transcoding] = {}
        self._classes: dict[str, type] = {}
        self._encoder = msgspec.msgpack.Encoder(enc_hook=self._enc_hook)
        self._decoder = msgspec.msgpack.Decoder(ext_hook=self._ext_hook)

    def register(self, transcoding: Transcoding) -> None:
        """Accepts eventsourcing Transcodings for custom value types (UUID, Decimal, datetime are native)."""
        if transcoding.name in NATIVE:
            return
        self._by_type[transcoding.type] = transcoding
        self._by_name[transcoding.name] = transcoding

    def encode(self, obj: Any) -> bytes:
        return self._encoder.encode(self._prepare(obj))

    def decode(self, data: bytes) -> Any:
        return self._decoder.decode(data)

    def _prepare(self, obj: Any) -> Any:
        """msgspec encodes enums, structs, tuples and naive datetimes natively but lossily: tag them."""
        kind = type(obj)
        if kind in _PLAIN:
            return obj
        if kind is dict:
            return {k: self._prepare(v) for k, v in obj.items()}
        if kind is list:
            return [self._prepare(v) for v in obj]
        if kind is UUID:
            return msgspec.msgpack.Ext(EXT_UUID, obj.bytes)
        if kind is Decimal:
            return msgspec.msgpack.Ext(EXT_DECIMAL, str(obj).encode())
        custom = self._by_type.get(kind)
        if custom is not None:
            return self._ext(EXT_CUSTOM, custom.name, custom.encode(obj))
        if isinstance(obj, Enum):
            return self._ext(EXT_ENUM, get_topic(kind), obj.value)
        if isinstance(obj, msgspec.Struct):
            return self._ext(EXT_STRUCT, get_topic(kind), msgspec.msgpack.encode(obj))
        if kind is tuple:
            return msgspec.msgpack.Ext(EXT_TUPLE, self.encode(list(obj)))
        if kind is dt.datetime and obj.tzinfo is None:
            return msgspec.msgpack.Ext(EXT_NAIVE, obj.isoformat().encode())
        return obj

    def _ext(self, code: int, topic: str, payload: Any) -> msgspec.msgpack.Ext:
        return msgspec.msgpack.Ext(code, self._encoder.encode([topic, payload]))

    def _enc_hook(self, obj: Any) -> Any:
        if isinstance(obj, UUID):
            return msgspec.msgpack.Ext(EXT_UUID, obj.bytes)
        raise TypeError(f"Object of type {type(obj)} is not serializable by MsgspecTranscoder")

    def _ext_hook(self, code: int, data: memoryview) -> Any:
        if code == EXT_UUID:
            return UUID(bytes=bytes(data))
        if code == EXT_DECIMAL:
            return Decimal(bytes(data).decode())
        if code == EXT_TUPLE:
            return tuple(self._decoder.decode(data))
        if code == EXT_NAIVE:
            return dt.datetime.fromisoformat(bytes(data).decode())
        topic, payload = self._decoder.decode(data)
        if code == EXT_ENUM:
            return self._class(topic)(payload)
        if code == EXT_STRUCT:
            return msgspec.msgpack.decode(payload, type=self._class(topic))
        if code == EXT_CUSTOM:
            return self._by_name[topic].decode(payload)
        raise ValueError(f"unknown MessagePack ext code {code}")

    def _class(self, topic: str) -> type:
        cls = self._classes.get(topic)
        if cls is None:
            cls = self._classes[topic] = resolve_topic(topic)
        return cls


_PLAIN = frozenset({str, int, float, bool, type(None), bytes})
