"""The embedded server stages atomic batches in memory (adapters/batch_staging.py): linked once a stream exists,
linked again after the server restarts (it unlinks them as it loads a stream), never into another user's
directory, and every batch still lands whole."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import stat
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import nats
import pytest
from nats.js.api import StorageType, StreamConfig

from adapters.batch_staging import BatchStaging, memory_dir
from adapters.nats_server import NatsServer
from adapters.nats_supervisor import Supervisor
from adapters.nats_tls import connect_options

pytestmark = pytest.mark.skipif(memory_dir({}) is None, reason="no writable tmpfs at /dev/shm on this machine")


async def _stream(url: str, name: str) -> None:
    nc = await nats.connect(**connect_options(url))
    await nc.jetstream().add_stream(StreamConfig(name=name, subjects=[f"{name}.>"], storage=StorageType.FILE,
                                                 allow_atomic=True, duplicate_window=120.0))
    await nc.close()


async def _batches(url: str, name: str, count: int, size: int = 4) -> int:
    """`count` atomic batches of `size` messages, each awaited; the stream's message count after."""
    nc = await nats.connect(**connect_options(url))
    inbox = nc.new_inbox()
    acks = await nc.subscribe(inbox + ".>")
    for n in range(count):
        batch = uuid.uuid4().hex
        for k in range(size):
            headers = {"Nats-Batch-Id": batch, "Nats-Batch-Sequence": str(k + 1)}
            if k == size - 1:
                headers["Nats-Batch-Commit"] = "1"
            await nc.publish(f"{name}.e.{uuid.uuid4().hex}", b"x" * 300, headers=headers,
                             reply=f"{inbox}.{n}" if k == size - 1 else "")
        answer = json.loads((await acks.next_msg(timeout=10)).data)
        assert "error" not in answer, answer
    info = await nc.jetstream().stream_info(name)
    await nc.close()
    return info.state.messages


def _linked(server: NatsServer, name: str) -> Path | None:
    found = list((server.store_dir / "jetstream" / "jetstream").glob(f"*/streams/{name}/batches"))
    return Path(os.readlink(found[0])) if found and found[0].is_symlink() else None


def _wait_linked(server: NatsServer, name: str, seconds: float = 5.0) -> Path | None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if (target := _linked(server, name)) is not None:
            return target
        time.sleep(0.05)
    return None


@contextlib.contextmanager
def _staged(store: Path, memory: Path, **water: int) -> Iterator[tuple[NatsServer, BatchStaging]]:
    """A supervised server (secure, with an encrypted store, as `roving up` starts it) staging into `memory`."""
    server = NatsServer(store).start()
    staging = BatchStaging(server.store_dir, memory, **water)
    supervisor = Supervisor(server, staging=staging).start()
    try:
        yield server, staging
    finally:
        supervisor.stop()
        server.stop()
        staging.close()


@pytest.fixture
def served(tmp_path: Path):
    with _staged(tmp_path / "nats", memory_dir({})) as (server, staging):
        yield server, staging
    assert not staging.root.exists()


def test_a_new_stream_stages_its_batches_in_a_private_memory_directory_and_they_land_whole(served) -> None:
    server, staging = served
    url = server.url_for("control")
    asyncio.run(_stream(url, "STAGED"))
    target = _wait_linked(server, "STAGED")
    assert target is not None, "the supervisor did not link the new stream's staging within 5 s"
    assert target.is_relative_to(staging.root) and target.is_dir()
    mode = os.lstat(staging.home)
    assert mode.st_uid == os.getuid() and stat.S_IMODE(mode.st_mode) == 0o700
    assert asyncio.run(_batches(url, "STAGED", 50)) == 200
    assert list(target.iterdir()) == []  # nothing staged outlives its commit


def test_after_the_server_is_killed_and_restarted_the_staging_is_linked_again_and_batches_land(served) -> None:
    server, _ = served
    url = server.url_for("control")
    asyncio.run(_stream(url, "AGAIN"))
    assert _wait_linked(server, "AGAIN") is not None
    assert asyncio.run(_batches(url, "AGAIN", 10)) == 40
    server.process.send_signal(signal.SIGKILL)
    server.process.wait()
    deadline = time.monotonic() + 10  # the supervisor starts it again; loading the stream unlinks its staging
    while time.monotonic() < deadline and (server.process.poll() is not None or _linked(server, "AGAIN") is None):
        time.sleep(0.05)
    assert _linked(server, "AGAIN") is not None, "not linked again after the restart"
    assert asyncio.run(_batches(server.url_for("control"), "AGAIN", 10)) == 80  # the first 40 kept, 40 more


def test_a_memory_directory_that_went_is_made_again_before_batches_fail(served) -> None:
    server, staging = served
    url = server.url_for("control")
    asyncio.run(_stream(url, "GONE"))
    target = _wait_linked(server, "GONE")
    assert target is not None
    target.rmdir()  # /dev/shm cleaned under a running server
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and not target.is_dir():
        time.sleep(0.05)
    assert target.is_dir()
    assert asyncio.run(_batches(url, "GONE", 5)) == 20


def test_a_memory_directory_another_user_could_enter_is_never_used(tmp_path: Path) -> None:
    memory = tmp_path / "shm"
    memory.mkdir()
    staging = BatchStaging(tmp_path / "nats", memory)
    staging.home.mkdir(mode=0o700)
    os.chmod(staging.home, 0o777)  # made (or opened) by someone else: not ours to stage in
    stream = staging.streams / "$G" / "streams" / "S"
    (stream / "batches").mkdir(parents=True)
    assert staging.tend() == 0
    assert not (stream / "batches").is_symlink()
    os.chmod(staging.home, 0o700)
    assert staging.tend() == 1
    assert (stream / "batches").is_symlink()


def test_staging_stays_on_disk_when_asked() -> None:
    assert memory_dir({"ROVING_NATS_BATCH_STAGING": "disk"}) is None


@pytest.fixture
def tiny_memory(tmp_path: Path):
    """A 2 MiB tmpfs of its own (mounting one needs root: CI's path), as a small or crowded /dev/shm."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs of the test's own needs root (CI runs it)")
    memory = tmp_path / "shm"
    memory.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m,mode=1777", "tmpfs", str(memory)], check=True)
    yield memory
    subprocess.run(["umount", "-l", str(memory)], check=False)


def _fill(memory: Path) -> Path:
    """Fill the tmpfs as another program would, all but a few pages."""
    filler = memory / "filler"
    with filler.open("wb", buffering=0) as out:
        try:
            while True:
                out.write(b"x" * 65536)
        except OSError:
            pass
    return filler


def test_a_memory_side_that_fills_sends_staging_back_to_disk_and_it_returns_when_there_is_room(tmp_path: Path,
                                                                                                tiny_memory: Path) -> None:
    with _staged(tmp_path / "nats", tiny_memory, low_water=512 * 1024, high_water=1024 * 1024) as (server, _):
        url = server.url_for("control")
        asyncio.run(_stream(url, "CROWDED"))
        assert _wait_linked(server, "CROWDED") is not None
        assert asyncio.run(_batches(url, "CROWDED", 5)) == 20
        filler = _fill(tiny_memory)  # every batch staged in memory now would be refused as "incomplete"
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and _linked(server, "CROWDED") is not None:
            time.sleep(0.05)
        assert _linked(server, "CROWDED") is None, "staging stayed in a full memory side"
        assert asyncio.run(_batches(url, "CROWDED", 20)) == 100  # staged on disk: every one lands whole
        filler.unlink()
        assert _wait_linked(server, "CROWDED") is not None, "staging did not return to memory once it had room"
        assert asyncio.run(_batches(url, "CROWDED", 5)) == 120


def test_a_memory_side_too_small_from_the_start_is_never_linked(tmp_path: Path, tiny_memory: Path) -> None:
    with _staged(tmp_path / "nats", tiny_memory) as (server, staging):  # 2 MiB: under the shipped LOW_WATER
        url = server.url_for("control")
        asyncio.run(_stream(url, "SMALL"))
        assert _wait_linked(server, "SMALL", seconds=2.5) is None
        assert staging.on_disk
        assert asyncio.run(_batches(url, "SMALL", 5)) == 20
