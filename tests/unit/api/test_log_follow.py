"""Following a stage's output: frames by stream, the end of the log, and a stage that never wrote one."""

from __future__ import annotations

import asyncio
import time

from api.http.routes import log_follow
from api.http.routes.log_follow import frame, frames
from tests.unit.api.harness import JOB, Api


def collect(source, ended) -> list[bytes]:
    async def main():
        return [piece async for piece in frames(source, ended)]
    return asyncio.run(main())


async def written(*chunks):
    for chunk in chunks:
        yield chunk


def test_each_chunk_is_framed_with_its_stream_and_the_answer_ends_with_the_log():
    out = collect(written(("stdout", b"hi\n"), ("stderr", b"oops\n")), lambda: False)
    assert out == [b"\x01\x00\x00\x00\x00\x00\x00\x03hi\n", b"\x02\x00\x00\x00\x00\x00\x00\x05oops\n"]
    assert frame("stderr", b"") == b"\x02" + b"\x00" * 7


def test_a_stage_that_never_writes_an_end_stops_a_grace_after_its_workflow_ended(monkeypatch):
    monkeypatch.setattr(log_follow, "TICK", 0.05)
    monkeypatch.setattr(log_follow, "GRACE", 0.2)
    closed = []

    async def silent():
        try:
            await asyncio.sleep(3600)
            yield ("stdout", b"never")
        finally:
            closed.append(True)

    began = time.monotonic()
    assert collect(silent(), lambda: time.monotonic() - began > 0.1) == []
    assert time.monotonic() - began < 2 and closed == [True]


def test_a_quiet_stage_sends_empty_frames_so_proxies_keep_the_stream(monkeypatch):
    monkeypatch.setattr(log_follow, "TICK", 0.02)
    monkeypatch.setattr(log_follow, "PING", 0.05)

    async def slow():
        await asyncio.sleep(0.3)
        yield ("stdout", b"late")

    out = collect(slow(), lambda: False)
    assert out[-1] == frame("stdout", b"late") and frame("stdout", b"") in out[:-1]


def test_the_route_streams_a_stages_output_and_names_a_missing_stage():
    api = Api()
    workflow = api.request("POST", "/v4/workflows", api.admin, json={"name": "w", "definition": JOB}).json()["id"]
    api.services.logs.lines[(workflow, "hello")] = b"hello\n"
    answer = api.request("GET", f"/v4/workflows/{workflow}/log/hello", api.admin, params={"follow": "true"})
    assert answer.status_code == 200 and answer.headers["content-type"] == log_follow.MEDIA_TYPE
    assert answer.content == frame("stdout", b"hello\n")
    missing = api.request("GET", f"/v4/workflows/{workflow}/log/nope", api.admin, params={"follow": "true"})
    assert missing.status_code == 404
