"""`roving federate` usage errors, and the member/topology helpers that need no server."""

from __future__ import annotations

import pytest

from adapters.federation import Federation
from adapters.federation_members import Member, members_from_metadata, origin_sequence
from adapters.nats_server import free_port
from api.federate.main import federate_main


@pytest.mark.parametrize("argv, fragment", [
    (["--member", "c1=c1"], "no hub"),
    (["--hub", "nats://127.0.0.1:1"], "no members"),
    (["--hub", "nats://127.0.0.1:1", "--member", "c1="], "has no domain"),
    (["--hub", "nats://127.0.0.1:1", "--member", "C1=c1"], "cluster name 'C1' is invalid"),
    (["--hub", "nats://127.0.0.1:1", "--member", "c1=c.1"], "domain 'c.1'"),
    (["--hub", "nats://127.0.0.1:1", "--member", "c1", "--member", "c1=x"], "named twice"),
    (["bogus", "--hub", "nats://127.0.0.1:1"], "invalid choice"),
    (["--hub", "nats://127.0.0.1:1", "--member", "c1", "--api", "c1"], "write CLUSTER=URL"),
    (["--hub", "nats://127.0.0.1:1", "--member", "c1", "--api", "c1=c1.example:8080"], "http:// or https://"),
    (["--hub", "nats://127.0.0.1:1", "--member", "c1", "--api", "c2=https://c2"], "c2 is not a --member"),
])
def test_bad_usage_exits_2_with_one_line_naming_the_fix(argv, fragment, capsys, monkeypatch) -> None:
    monkeypatch.delenv("ROVING_FEDERATION_HUB", raising=False)
    assert federate_main(argv) == 2
    err = capsys.readouterr().err
    assert fragment in err and err.startswith("roving federate: ") and err.count("\n") == 1


def test_unreachable_hub_exits_1_naming_the_fix(capsys) -> None:
    code = federate_main(["status", "--hub", f"nats://127.0.0.1:{free_port()}", "--timeout", "0.5"])
    assert code == 1
    assert "start the hub nats-server" in capsys.readouterr().err


def test_member_parsing_and_names() -> None:
    assert Member.parse("c1") == Member("c1", "c1")
    member = Member.parse(" gpu-east = east ")
    assert (member.cluster, member.domain, member.stream, member.api, member.subjects) == (
        "gpu-east", "east", "ROVING_GPU_EAST", "$JS.east.API", "roving.gpu-east.>")
    assert members_from_metadata({"roving.member.c2": "d2", "roving.member.c1": "d1", "other": "x"}) == [
        Member("c1", "d1"), Member("c2", "d2")]
    assert members_from_metadata({"roving.member.c1": "c1", "roving.api.c1": "https://c1:8080"}) == [
        Member("c1", "c1", "https://c1:8080")]
    assert Federation("nats://h", [Member("c1", "c1")]).stream == "ROVING_FEDERATED"


def test_origin_sequence_reads_the_servers_source_header() -> None:
    header = {"Nats-Stream-Source": "ROVING_C1:soX40Igl 17 > > roving.c1.ledger.0 xLS96oSh"}
    assert origin_sequence(header) == ("ROVING_C1", 17)
    assert origin_sequence({}) is None and origin_sequence(None) is None
    assert origin_sequence({"Nats-Stream-Source": "garbage"}) is None
