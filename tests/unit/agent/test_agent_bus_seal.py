"""The agent bus's seal: a node's pushed work opens with that node's key at that epoch only, on its own subject, and
an agent takes a push only once, only fresh, only its own (api/agent/bus.py)."""

from __future__ import annotations

import asyncio
import time
from uuid import UUID

import msgspec
import pytest

from adapters.agent_bus import Unsealed, key_text, node_key, open_sealed, seal, starts_subject
from api.agent.bus import AgentBus
from domain.agent_protocol import Assignments, Pushed, Report, Reports

SECRET = b"k" * 32  # the control plane's signing key
A, B = "00000000-0000-4000-8000-00000000000a", "00000000-0000-4000-8000-00000000000b"
RUN_SPEC = b'{"start":[],"stop":[],"volumes":null}'


def pushed(node: str, epoch: int, seq: int | None = None) -> tuple[str, bytes]:
    subject = starts_subject("local", node)
    body = msgspec.json.encode(Pushed(node_id=UUID(node), epoch=epoch, seq=seq or time.time_ns(), etag='"t"',
                                      assignments=msgspec.Raw(RUN_SPEC)))
    return subject, seal(node_key(SECRET, node, epoch), epoch, subject, body)


def bus_of(node: str, epoch: int) -> AgentBus:
    bus = AgentBus(lambda: node, asyncio.Event())
    bus.keyed(epoch, key_text(node_key(SECRET, node, epoch)))
    return bus


def test_node_as_push_opens_with_its_own_key_and_with_no_other_nodes():
    subject, message = pushed(A, 3)
    assert msgspec.json.decode(open_sealed(node_key(SECRET, A, 3), subject, message), type=Pushed).epoch == 3
    with pytest.raises(Unsealed):
        open_sealed(node_key(SECRET, B, 3), subject, message)


def test_a_push_sealed_for_an_earlier_registration_does_not_open_with_the_current_epochs_key():
    subject, message = pushed(A, 3)
    with pytest.raises(Unsealed):
        open_sealed(node_key(SECRET, A, 4), subject, message)


def test_a_push_moved_to_another_nodes_subject_does_not_open_there():
    _, message = pushed(A, 3)
    with pytest.raises(Unsealed):
        open_sealed(node_key(SECRET, A, 3), starts_subject("local", B), message)


def test_a_tampered_push_does_not_open():
    subject, message = pushed(A, 3)
    for at in (5, 30, len(message) - 1):  # the epoch, the ciphertext, the tag
        bent = bytearray(message)
        bent[at] ^= 1
        with pytest.raises(Unsealed):
            open_sealed(node_key(SECRET, A, 3), subject, bytes(bent))


def test_a_key_from_another_control_plane_secret_opens_nothing():
    subject, message = pushed(A, 3)
    with pytest.raises(Unsealed):
        open_sealed(node_key(b"x" * 32, A, 3), subject, message)


def test_an_agent_takes_a_push_once_and_refuses_it_replayed():
    bus = bus_of(A, 3)
    subject, message = pushed(A, 3)
    assert bus.opened(subject, message).node_id == UUID(A)
    with pytest.raises(Unsealed, match="no newer"):
        bus.opened(subject, message)


def test_an_agent_refuses_a_push_recorded_long_ago_even_after_a_restart():
    subject, message = pushed(A, 3, seq=time.time_ns() - 600 * 10**9)
    with pytest.raises(Unsealed, match="120 s"):
        bus_of(A, 3).opened(subject, message)


def test_an_agent_with_another_nodes_key_cannot_read_its_pushes():
    subject, message = pushed(A, 3)
    with pytest.raises(Unsealed):
        bus_of(B, 3).opened(subject, message)


def test_an_agent_that_registered_anew_refuses_its_previous_epochs_pushes():
    subject, message = pushed(A, 3)
    with pytest.raises(Unsealed):
        bus_of(A, 4).opened(subject, message)


def test_a_push_is_the_assignments_answer_with_its_volumes_left_to_the_poll():
    bus = bus_of(A, 3)
    subject, message = pushed(A, 3)

    class Message:
        pass

    m = Message()
    m.subject, m.data = subject, message  # type: ignore[attr-defined]
    asyncio.run(bus._received(m))
    [(answer, refused, tag)] = bus.take()
    assert answer == Assignments(start=[], stop=[], volumes=None) and refused == [] and tag == '"t"'
    assert bus.live and bus.wake.is_set()


def test_a_push_an_agent_cannot_take_sends_it_back_to_polling_at_once():
    bus = bus_of(A, 3)
    subject, message = pushed(A, 3, seq=time.time_ns() - 600 * 10**9)  # say, a new leader's clock far behind

    class Message:
        pass

    m = Message()
    m.subject, m.data = subject, message  # type: ignore[attr-defined]
    bus.live = True
    asyncio.run(bus._received(m))
    assert bus.take() == [] and not bus.live and bus.missed  # its polls no longer say they hear the bus


def test_an_agent_that_has_heard_no_push_sends_its_reports_over_http():
    bus = bus_of(A, 3)
    bus.nc = object()  # connected, keyed, but nothing heard: the server may not let it use the bus at all
    report = Report(node_id=UUID(A), allocation_id=UUID(B), epoch=3, event="exited", exit_code=0)
    assert asyncio.run(bus.report(Reports(node_id=UUID(A), reports=[report]))) is None


# RUN_SPEC sealed for node A at epoch 3 by an agent before the OpenSSL seal (pycryptodome's GCM, nonce b"n" * 12,
# the tag appended), recorded then: AES-GCM is the same bytes whichever library computes it.
SEALED_BY_AN_OLDER_AGENT = bytes.fromhex(
    "0100000000000000036e6e6e6e6e6e6e6e6e6e6e6ec90b3d11808a6868270a5fb5d3c9dee282d3b37528f69fc7b936e188ea3f2695fcd7"
    "bae73e91619c721ba2b0955e0707ddb7bcccc4")


def test_an_envelope_sealed_by_an_older_agent_opens_and_one_sealed_now_opens_the_same_way():
    key, subject = node_key(SECRET, A, 3), starts_subject("local", A)
    assert open_sealed(key, subject, SEALED_BY_AN_OLDER_AGENT) == RUN_SPEC
    now = seal(key, 3, subject, RUN_SPEC)
    assert now[:9] == SEALED_BY_AN_OLDER_AGENT[:9] and open_sealed(key, subject, now) == RUN_SPEC
    with pytest.raises(Unsealed):
        open_sealed(key, subject, SEALED_BY_AN_OLDER_AGENT[:-1] + bytes([SEALED_BY_AN_OLDER_AGENT[-1] ^ 1]))
