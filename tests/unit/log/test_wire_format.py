"""The few bytes the JetStream adapter reads and writes itself, instead of nats-py: frames of our own
subscriptions, header blocks, `$JS.ACK` sequences, aggregate ids in subjects, and the frames it publishes."""

from __future__ import annotations

import asyncio
from uuid import uuid4

import pytest
from nats.protocol.parser import Parser

from adapters.jetstream import parser, wire
from adapters.jetstream.cursor import sequence_of
from adapters.jetstream.inbox import parse_headers, read_headers
from adapters.jetstream.messages import _uuid

OURS, THEIRS = 7, 3
HEADERS = b"NATS/1.0\r\nNats-Sequence: 41\r\nNats-Subject: roving.c.item.x\r\nRoving-Topic: m:Item.Created\r\n\r\n"


def hmsg(subject: bytes, sid: int, reply: bytes, headers: bytes, payload: bytes) -> bytes:
    args = b" ".join(x for x in (subject, str(sid).encode(), reply) if x)
    return b"HMSG %s %d %d\r\n%s%s\r\n" % (args, len(headers), len(headers) + len(payload), headers, payload)


class Connection:
    """What nats-py's parser calls on its client, recorded."""

    def __init__(self) -> None:
        self.calls: list[tuple] = []

    async def _process_msg(self, sid, subject, reply, data, headers) -> None:
        self.calls.append(("msg", sid, subject, reply, data, headers))

    async def _process_ping(self) -> None:
        self.calls.append(("ping",))


STREAM = b"".join([
    hmsg(b"_INBOX.a.1", OURS, b"", HEADERS, b"first"),
    hmsg(b"roving.c.item.x", OURS, b"$JS.ACK.S.C.1.41.1.0.0", HEADERS, b"second"),
    b"MSG _INBOX.a.3 7 11\r\n{\"seq\": 42}\r\n",  # a publish's ack: no headers
    b"MSG _INBOX.a.4 7 r.1 0\r\n\r\n",
    b"PING\r\n",
    hmsg(b"other", THEIRS, b"", HEADERS, b"theirs"),
    hmsg(b"_INBOX.a.2", OURS, b"", HEADERS, b""),
    b"MSG plain 3 5\r\nhello\r\n",
])


def parsed_in_chunks(chunks: list[bytes]) -> tuple[list[tuple], list[tuple]]:
    nc, ours = Connection(), []
    fast = parser.FastParser(nc, {OURS: lambda *frame: ours.append(frame)})  # type: ignore[arg-type]

    async def feed() -> None:
        for chunk in chunks:
            await fast.parse(chunk)

    asyncio.run(feed())
    return ours, nc.calls


def test_our_frames_go_to_their_handler_and_every_other_frame_to_nats_py_in_order():
    ours, theirs = parsed_in_chunks([STREAM])
    assert ours[:4] == [(b"_INBOX.a.1", b"", b"first", HEADERS),
                        (b"roving.c.item.x", b"$JS.ACK.S.C.1.41.1.0.0", b"second", HEADERS),
                        (b"_INBOX.a.3", b"", b'{"seq": 42}', None),
                        (b"_INBOX.a.4", b"r.1", b"", None)]
    assert [c[0] for c in theirs] == ["ping", "msg", "msg", "msg"]
    assert theirs[1][1:5] == (THEIRS, b"other", b"", b"theirs")
    assert theirs[2][1] == OURS  # after a foreign frame nats-py parses the rest: our hook still routes it
    assert theirs[3][1:5] == (THEIRS, b"plain", b"", b"hello")


def test_a_stream_cut_anywhere_parses_to_the_same_frames():
    def ours_and_theirs(chunks: list[bytes]) -> tuple[list, list]:
        ours, others = parsed_in_chunks(chunks)  # ours that went nats-py's way reach the handler by our hook
        return (sorted([(f[0], f[2]) for f in ours] + [(c[2], c[4]) for c in others if c[:2] == ("msg", OURS)]),
                [c[:5] for c in others if c[:2] != ("msg", OURS)])

    whole = ours_and_theirs([STREAM])
    assert len(whole[0]) == 5 and len(whole[1]) == 3
    for cut in range(1, len(STREAM)):
        assert ours_and_theirs([STREAM[:cut], STREAM[cut:]]) == whole, f"cut at byte {cut}"


def test_an_inline_status_is_read_as_nats_py_reads_it():
    assert parse_headers(b"NATS/1.0 204 EOB\r\nNats-Num-Pending: 0\r\nNats-Last-Sequence: 9\r\n\r\n") == {
        "Status": "204", "Nats-Num-Pending": "0", "Nats-Last-Sequence": "9"}
    assert parse_headers(b"NATS/1.0 404 No Messages\r\n\r\n") == {"Status": "404"}
    assert parse_headers(None) == {}


def test_a_stored_message_keeps_only_the_headers_the_recorders_read():
    assert read_headers(HEADERS + b"Nats-Msg-Id: x:1\r\n") == {
        "Nats-Sequence": "41", "Nats-Subject": "roving.c.item.x", "Roving-Topic": "m:Item.Created"}


def test_the_stream_sequence_comes_from_either_form_of_ack_subject():
    assert sequence_of(b"$JS.ACK.ROVING_C.abc.1.4021.17.1733300000000000000.12") == 4021
    assert sequence_of(b"$JS.ACK.hub.ACCHASH.ROVING_C.abc.1.4021.17.1733300000000000000.12.tok") == 4021


def test_an_aggregate_id_in_a_subject_reads_back_as_the_same_uuid():
    oid = uuid4()
    assert _uuid(str(oid)) == oid and hash(_uuid(str(oid))) == hash(oid)
    assert _uuid(str(oid).upper()) == oid  # not the canonical form: the constructor reads it
    with pytest.raises(ValueError):
        _uuid("0x" + "f" * 34)


def test_a_frame_we_write_reads_back_through_nats_py_with_its_headers_and_payload():
    nc = Connection()
    frame = wire.frame("roving.c.item.x", "_INBOX.r.1", {"Roving-Topic": "m:Item.Created", "Roving-Version": " 3\n"},
                       b"payload")
    assert frame.startswith(b"HPUB roving.c.item.x _INBOX.r.1 ")
    relayed = b"HMSG roving.c.item.x 1 _INBOX.r.1 " + frame[len(b"HPUB roving.c.item.x _INBOX.r.1 "):]  # as the server would
    asyncio.run(Parser(nc).parse(relayed))  # type: ignore[arg-type]
    (_, sid, subject, reply, data, headers), = nc.calls
    assert (subject, reply, data) == (b"roving.c.item.x", b"_INBOX.r.1", b"payload")
    assert parse_headers(headers) == {"Roving-Topic": "m:Item.Created", "Roving-Version": "3"}
