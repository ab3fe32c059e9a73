"""An object:// transfer finds the API and the workflow's token in its stage's environment, or fails saying so."""

import pytest

from adapters.transfer_objects import ObjectTransferError, object_url
from adapters.transfer_remote import Permanent, download
from domain.fuzzfile import parse_fuzzfile


def test_the_url_and_token_come_from_the_stages_environment(monkeypatch):
    monkeypatch.setenv("ROVING_API", "http://api.example/")
    monkeypatch.setenv("FB_WORKFLOW_TOKEN", "rv1.a.b")
    assert object_url("object://group/ml/w b.pt") == ("http://api.example/v4/objects/group/ml/w%20b.pt",
                                                     {"Authorization": "Bearer rv1.a.b"})
    assert object_url("inputs/x")[0] == "http://api.example/v4/objects/user/inputs/x"


def test_without_a_token_the_transfer_fails_at_once_saying_why(monkeypatch, tmp_path):
    monkeypatch.delenv("FB_WORKFLOW_TOKEN", raising=False)
    monkeypatch.setenv("ROVING_API", "http://api.example")
    with pytest.raises(Permanent, match="needs the workflow's token"):
        download("object://user/x", tmp_path / "x", "", lambda n: None)


def test_a_folder_is_not_an_object_to_move(monkeypatch):
    monkeypatch.setenv("ROVING_API", "http://api.example")
    monkeypatch.setenv("FB_WORKFLOW_TOKEN", "rv1.a.b")
    with pytest.raises(ObjectTransferError, match="is a folder"):
        object_url("object://user/runs/")


def test_a_fuzzfile_may_name_objects_as_ingress_sources_and_egress_destinations():
    parsed = parse_fuzzfile("""version: v4
volumes:
  v:
    reference: volume://user/ephemeral
    ingress: [{source: {uri: object://user/in.csv}, destination: {uri: file://in.csv}}]
    egress: [{source: {uri: file://out.csv}, destination: {uri: object://group/ml/out.csv}}]
jobs:
  j: {image: {uri: docker://alpine:3.20}, command: ["true"], mounts: {/v: {volume: v}}}
""")
    assert parsed.errors == []
