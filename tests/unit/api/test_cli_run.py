"""`roving run`: --volume specs as written, the one-job Fuzzfile it submits, and bad usage exiting 2."""

from __future__ import annotations

import io
import json
import sys

import httpx
import pytest

from api.cli.client import Client
from api.cli.main import build_parser, execute
from api.cli.run import write_frames
from api.cli.run_spec import RunUsage, VolumeSpec, definition, parse_volume, unique
from domain.fuzzfile import parse_fuzzfile


@pytest.mark.parametrize("text, expected", [
    ("/scratch", VolumeSpec("scratch", "volume://user/ephemeral", "/scratch")),
    ("/a/b/", VolumeSpec("a-b", "volume://user/ephemeral", "/a/b")),
    ("data:/data", VolumeSpec("data", "volume://user/persistent/data", "/data")),
    ("in=data:/input", VolumeSpec("in", "volume://user/persistent/data", "/input")),
    ("volume://group/persistent/shared:/shared", VolumeSpec("shared", "volume://group/persistent/shared", "/shared")),
    ("tmp=/tmp/work,size=10GiB", VolumeSpec("tmp", "volume://user/ephemeral", "/tmp/work", 10 * 2**30)),
    ("/d,size=1GB,tier=fast", VolumeSpec("d", "volume://user/ephemeral", "/d", 10**9, {"tier": "fast"})),
])
def test_a_volume_spec_reads_as_its_key_reference_and_mount(text, expected):
    assert parse_volume(text) == expected


@pytest.mark.parametrize("text, reason", [
    ("data", "the mount path must be absolute"),
    ("data:relative", "the mount path must be absolute"),
    ("/", "the mount path must be absolute"),
    ("/a/../b", "without `..`"),
    ("bad name:/x", "is neither a volume name nor a volume:// reference"),
    ("volume://galaxy/x:/x", "volume://galaxy/x"),
    ("/d,size=lots", "size:"),
    ("/d,size=0", "size must be more than zero"),
    ("/d,fast", "is not NAME=VALUE"),
])
def test_a_volume_spec_that_cannot_be_used_names_the_flag_and_why(text, reason):
    with pytest.raises(RunUsage, match="--volume") as refused:
        parse_volume(text)
    assert reason in str(refused.value)


def test_repeated_keys_are_numbered_and_a_mount_path_used_twice_is_refused():
    volumes = unique([parse_volume("/a"), parse_volume("a=/b"), parse_volume("a=/c")])
    assert [v.key for v in volumes] == ["a", "a-2", "a-3"]
    with pytest.raises(RunUsage, match="two volumes are mounted at /a"):
        unique([parse_volume("/a"), parse_volume("x=/a")])


def test_the_definition_is_a_fuzzfile_the_server_parser_accepts_as_one_job():
    volumes = unique([parse_volume("/scratch"), parse_volume("data:/data")])
    built = definition(["python3", "-c", "print('hi there')"], "docker://python:3.12", volumes, ["A=1"], 2, "1GiB",
                       None)
    parsed = parse_fuzzfile(json.dumps(built))
    assert parsed.errors == []
    job = parsed.definition.jobs["run"]
    assert job.command == ["python3", "-c", "print('hi there')"] and job.env == ["A=1"]
    assert {path: m.volume for path, m in job.mounts.items()} == {"/scratch": "scratch", "/data": "data"}
    assert parsed.definition.volumes["data"].reference == "volume://user/persistent/data"


def test_with_stdin_the_command_reads_a_file_sent_along_quoted_as_given():
    built = definition(["grep", "-c", "a b"], "docker://alpine:3.20", [], [], 1, None, "a b\nc\n")
    job = built["jobs"]["run"]
    assert job["files"] == {".roving-stdin": "a b\nc\n"}
    assert job["script"] == "#!/bin/sh\nexec grep -c 'a b' < .roving-stdin\n"
    assert parse_fuzzfile(json.dumps(built)).errors == []


def test_frames_go_to_their_streams_and_a_frame_cut_across_reads_waits_for_its_rest(capfdbinary):
    whole = bytes([1, 0, 0, 0, 0, 0, 0, 3]) + b"out" + bytes([2, 0, 0, 0, 0, 0, 0, 3]) + b"err"
    rest = write_frames(whole[:13])
    assert rest == whole[11:13]
    assert write_frames(rest + whole[13:]) == b""
    captured = capfdbinary.readouterr()
    assert (captured.out, captured.err) == (b"out", b"err")


def submitted(argv, stdin: str | None = None, monkeypatch=None):
    sent = []

    def handle(request: httpx.Request) -> httpx.Response:
        if request.method == "POST":
            sent.append(json.loads(request.read()))
            return httpx.Response(422, json={"error": "stop here", "errors": [{"path": "", "message": "stop here"}]})
        return httpx.Response(500)
    if stdin is not None:
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin.encode())))
    code = execute(build_parser().parse_args(argv), Client("http://roving.test", transport=httpx.MockTransport(handle)))
    return code, sent


def test_run_submits_the_command_after_the_double_dash_and_reports_a_refusal_as_1(capsys):
    code, sent = submitted(["run", "--volume", "/scratch", "--image", "docker://busybox", "--", "ls", "-l", "/"])
    assert code == 1 and "stop here" in capsys.readouterr().err
    job = sent[0]["definition"]["jobs"]["run"]
    assert job["command"] == ["ls", "-l", "/"] and job["image"] == {"uri": "docker://busybox"}
    assert sent[0]["name"] == "run-ls"


def test_run_with_i_sends_standard_input(capsys, monkeypatch):
    code, sent = submitted(["run", "-i", "--", "wc", "-l"], stdin="one\ntwo\n", monkeypatch=monkeypatch)
    assert sent[0]["definition"]["jobs"]["run"]["files"] == {".roving-stdin": "one\ntwo\n"}


@pytest.mark.parametrize("argv, message", [
    (["run"], "give the command after --"),
    (["run", "--"], "give the command after --"),
    (["run", "--volume", "data", "--", "true"], "--volume 'data': the mount path must be absolute"),
    (["run", "-v", "/a", "-v", "b=/a", "--", "true"], "--volume: two volumes are mounted at /a"),
])
def test_bad_usage_exits_2_naming_the_flag(capsys, argv, message):
    code, sent = submitted(argv)
    assert code == 2 and message in capsys.readouterr().err and sent == []


def test_a_bad_number_of_cpus_is_argparses_exit_2(capsys):
    with pytest.raises(SystemExit) as exited:
        build_parser().parse_args(["run", "--cpus", "many", "--", "true"])
    assert exited.value.code == 2 and "--cpus" in capsys.readouterr().err
