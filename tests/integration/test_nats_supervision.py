"""The embedded nats-server is supervised: one server per store, restarted when it dies, failing fast while down."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from eventsourcing.persistence import OperationalError

from adapters.jetstream.refusals import LogUnavailable
from adapters.nats_owner import servers_of
from adapters.nats_server import NatsServer, NatsServerError
from adapters.nats_supervisor import Supervisor
from tests.integration.ledger import Ledgers, env_for

ROOT = Path(__file__).resolve().parents[2]


def starter(store: Path, then: str, die_with_parent: bool = False) -> subprocess.Popen:
    """Another control plane: starts a server on `store`, prints its pid, then runs `then`."""
    code = textwrap.dedent(f"""
        import os, sys, time
        from pathlib import Path
        from adapters.nats_server import NatsServer
        server = NatsServer(Path({str(store)!r}), die_with_parent={die_with_parent}).start()
        print(server.process.pid, flush=True)
        {then}
    """)
    return subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, stdout=subprocess.PIPE, text=True)


def started_pid(process: subprocess.Popen) -> int:
    with process.stdout:
        return int(process.stdout.readline())


def gone_within(pid: int, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not Path(f"/proc/{pid}/cmdline").exists() or not Path(f"/proc/{pid}/cmdline").read_bytes():
            return True
        time.sleep(0.05)
    return False


def test_a_server_left_on_the_store_by_a_control_plane_that_died_is_stopped_before_ours_starts(tmp_path):
    store = tmp_path / "nats"
    left = starter(store, "os._exit(0)")  # killed before its server: the server lives on, orphaned
    stale = started_pid(left)
    left.wait(10)
    assert servers_of(NatsServer(store).config_path, store / "roving.pid") == [stale]
    server = NatsServer(store).start()
    try:
        assert gone_within(stale, 1)
        assert servers_of(server.config_path, store / "roving.pid") == [server.process.pid]
        assert (store / "roving.pid").read_text().strip() == str(server.process.pid)
    finally:
        server.stop()


def test_a_store_served_by_a_live_control_plane_is_refused_and_its_server_left_alone(tmp_path):
    store = tmp_path / "nats"
    owner = starter(store, "time.sleep(60)", die_with_parent=True)
    try:
        theirs = started_pid(owner)
        with pytest.raises(NatsServerError, match=f"running control plane \\(pid {owner.pid}\\)"):
            NatsServer(store).start()
        assert servers_of(NatsServer(store).config_path, store / "roving.pid") == [theirs]
    finally:
        owner.kill()
        owner.wait()


def test_a_server_started_to_die_with_its_parent_goes_when_the_parent_is_killed(tmp_path):
    owner = starter(tmp_path / "nats", "time.sleep(60)", die_with_parent=True)
    server_pid = started_pid(owner)
    owner.send_signal(signal.SIGKILL)
    owner.wait()
    assert gone_within(server_pid, 5), "the nats-server outlived the SIGKILLed control plane"


def test_a_killed_server_is_restarted_on_the_same_port_and_store_and_saves_carry_on(tmp_path):
    server = NatsServer(tmp_path / "nats", die_with_parent=True).start()
    restarts: list[float] = []
    supervisor = Supervisor(server, on_restart=lambda: restarts.append(time.monotonic())).start()
    app = Ledgers(env=env_for(server.url, "supervised"))
    try:
        before = app.open_with_entries(2)
        port, first_pid = server.port, server.process.pid
        killed = time.monotonic()
        os.kill(first_pid, signal.SIGKILL)
        after = app.open_with_entries(2)  # waits for the restart, within the connection's grace
        assert restarts and restarts[0] - killed < 3, f"restarted after {restarts and restarts[0] - killed}"
        assert (server.port, supervisor.restarts) == (port, 1) and server.process.pid != first_pid
        assert [len(app.repository.get(i).entries) for i in (before, after)] == [2, 2]
    finally:
        app.close()
        supervisor.stop()
        server.stop()


def test_a_save_fails_fast_with_log_unavailable_while_the_server_stays_down(tmp_path):
    server = NatsServer(tmp_path / "nats").start()
    app = Ledgers(env=env_for(server.url, "down"))
    try:
        app.open_with_entries(1)
        server.kill()
        started = time.monotonic()
        with pytest.raises(LogUnavailable):
            app.open_with_entries(1)
        first = time.monotonic() - started
        started = time.monotonic()
        with pytest.raises(OperationalError):
            app.open_with_entries(1)
        second = time.monotonic() - started
        assert first < 8 and second < 1, f"waited {first:.1f}s then {second:.1f}s"
    finally:
        app.close()
        server.stop()
