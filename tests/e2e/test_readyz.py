"""`GET /readyz` reflects whether the log takes writes (the contract: 503 naming the cause within 5 s of the log
becoming unwritable, 200 again within 5 s of it recovering, with no restart of `roving up`): a frozen nats-server,
a full disk under its store, and a server that is gone."""

from __future__ import annotations

import errno
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.e2e.stack import LocalStack
from tests.e2e.test_nats_supervision import HELLO, breakable_server, server_pid

CONTRACT = 5.0
STORE_DISK = "200m"


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalStack]:
    """One stack whose log store is a small filesystem of its own when we may mount one (root), so it can be
    filled without filling the machine's disk."""
    base = tmp_path_factory.mktemp("readyz")
    data = base / "data"
    (data / "nats").mkdir(parents=True)
    mounted = os.geteuid() == 0 and subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={STORE_DISK},mode=0700", "tmpfs", str(data / "nats")],
        capture_output=True).returncode == 0
    env, broken = breakable_server(base)
    running = LocalStack(data, nodes=1, settings=env)
    running.mounted, running.broken = mounted, broken
    try:
        yield running.start()
    finally:
        running.stop()
        if mounted:
            subprocess.run(["umount", "-l", str(data / "nats")], check=False)


def readyz(stack: LocalStack) -> tuple[int, str]:
    try:
        answer = httpx.get(stack.url + "/readyz", timeout=3)
    except httpx.HTTPError as error:
        return 0, repr(error)
    return answer.status_code, answer.json().get("reason", "")


def within(stack: LocalStack, status: int, seconds: float) -> tuple[float, str]:
    """Seconds until /readyz answers `status` (and its reason); fails past `seconds` + 5."""
    began = time.monotonic()
    while time.monotonic() - began < seconds + 5:
        found, reason = readyz(stack)
        if found == status:
            return time.monotonic() - began, reason
        time.sleep(0.1)
    raise AssertionError(f"/readyz did not answer {status} within {seconds + 5:.0f}s (last: {found} {reason})")


def fill(path: Path) -> None:
    """Write until the filesystem refuses."""
    with open(path, "wb") as out:
        chunk = b"\0" * 2**20
        try:
            while True:
                out.write(chunk)
                out.flush()
        except OSError as error:
            assert error.errno == errno.ENOSPC, error


def test_a_frozen_nats_server_makes_readyz_503_and_thawing_it_200(stack):
    assert readyz(stack)[0] == 200
    pid = server_pid(stack)
    os.kill(pid, signal.SIGSTOP)
    try:
        took, reason = within(stack, 503, CONTRACT)
        assert took < CONTRACT and "frozen" in reason, (took, reason)
        print(f"frozen: 503 after {took:.1f}s ({reason})")
    finally:
        os.kill(pid, signal.SIGCONT)
    took, _ = within(stack, 200, CONTRACT)
    assert took < CONTRACT
    print(f"thawed: 200 after {took:.1f}s")
    assert stack.client.post("/v4/workflows", json={"name": "thawed", "definition": HELLO}).status_code == 201


def test_a_full_disk_under_the_log_makes_readyz_503_and_room_again_200_without_a_restart(stack):
    if not stack.mounted:
        pytest.skip("needs root to mount a small filesystem for the log store (CI runs as root)")
    filler = stack.data_dir / "nats" / "filler"
    fill(filler)
    try:
        took, reason = within(stack, 503, CONTRACT)
        assert took < CONTRACT and "disk is full" in reason, (took, reason)
        print(f"disk full: 503 after {took:.1f}s ({reason})")
        answer = stack.client.post("/v4/workflows", json={"name": "while-full", "definition": HELLO}, timeout=90)
        assert answer.status_code == 503 and answer.json()["code"] == "log_unavailable", answer.text
        assert "disk is full" in answer.json()["error"] and answer.headers["Retry-After"]
    finally:
        filler.unlink()
    took, _ = within(stack, 200, CONTRACT)
    assert took < CONTRACT, f"200 again {took:.1f}s after the disk had room"
    print(f"room again: 200 after {took:.1f}s")
    workflow = stack.submit(HELLO, "after-the-disk-filled")
    assert stack.wait_status(workflow, ("FINISHED", "FAILED"))["status"] == "FINISHED"


def test_a_gone_nats_server_makes_readyz_503_and_its_return_200(stack):
    stack.broken.touch()  # the supervisor's restarts fail until the flag goes
    try:
        os.kill(server_pid(stack), signal.SIGKILL)
        took, reason = within(stack, 503, CONTRACT)
        assert took < CONTRACT and "unreachable" in reason, (took, reason)
        print(f"gone: 503 after {took:.1f}s ({reason})")
    finally:
        stack.broken.unlink()
    took, _ = within(stack, 200, CONTRACT + 5)  # the supervisor's backoff may have grown meanwhile
    print(f"back: 200 after {took:.1f}s")
    assert stack.client.post("/v4/workflows", json={"name": "back", "definition": HELLO}).status_code == 201
