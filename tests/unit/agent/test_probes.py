"""Readiness probes: exec, http-get and tcp-socket checks and the thresholds of the runner."""

from __future__ import annotations

import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import msgspec
import pytest

from adapters.probes import ProbeRunner, check, kebab_keys
from domain.fuzzfile.schema import Probe


def probe(**fields) -> Probe:
    return msgspec.convert(kebab_keys(fields), Probe)


@pytest.fixture
def http_server():
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response({"/ok": 200, "/moved": 302}.get(self.path, 503))
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()
    thread.join()


def test_http_get_passes_on_2xx_and_3xx_and_fails_otherwise(http_server):
    assert check(probe(**{"http-get": {"port": http_server, "path": "/ok"}})) is None
    assert check(probe(**{"http-get": {"port": http_server, "path": "/moved"}})) is None
    assert check(probe(**{"http-get": {"port": http_server, "path": "/down"}})) == "HTTP 503 from /down"


def test_tcp_socket_passes_when_a_connection_opens():
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        assert check(probe(**{"tcp-socket": {"port": port}})) is None
    assert check(probe(**{"tcp-socket": {"port": port}})).startswith(f"tcp-socket 127.0.0.1:{port}")


def test_exec_passes_when_the_command_exits_zero():
    assert check(probe(exec={"command": ["true"]})) is None
    assert check(probe(exec={"command": ["false"]})) == "exec false exited 1"
    assert "timed out" in check(probe(exec={"command": ["sleep", "5"]}, timeout_seconds=0.1))


def test_the_runner_reports_ready_after_enough_successes_in_a_row():
    ready = threading.Event()
    runner = ProbeRunner(probe(exec={"command": ["true"]}, period_seconds=0.01, success_threshold=3),
                         ready.set, lambda why: None).start()
    assert ready.wait(5)
    runner.stop()


def test_the_runner_gives_up_after_the_failure_threshold():
    failures: list[str] = []
    done = threading.Event()
    runner = ProbeRunner(probe(exec={"command": ["false"]}, period_seconds=0.01, failure_threshold=2),
                         lambda: None, lambda why: (failures.append(why), done.set())).start()
    assert done.wait(5)
    runner.stop()
    assert failures == ["readiness probe failed 2 times: exec false exited 1"]


def test_a_stopped_runner_never_reports():
    calls: list[str] = []
    runner = ProbeRunner(probe(exec={"command": ["true"]}, initial_delay_seconds=5),
                         lambda: calls.append("ready"), calls.append).start()
    runner.stop()
    assert calls == []


def test_after_readiness_failures_make_it_unready_without_killing_it_and_passes_make_it_ready_again(tmp_path):
    healthy = tmp_path / "healthy"
    healthy.touch()
    events: list[str] = []
    changed = threading.Semaphore(0)

    def seen(what: str) -> None:
        events.append(what)
        changed.release()

    spec = probe(exec={"command": ["test", "-e", str(healthy)]}, period_seconds=0.01, failure_threshold=2)
    runner = ProbeRunner(spec, lambda: seen("ready"), lambda why: seen(f"killed: {why}"),
                         on_unready=lambda why: seen(f"unready: {why}")).start()
    assert changed.acquire(timeout=5)
    healthy.unlink()
    assert changed.acquire(timeout=5)
    healthy.touch()
    assert changed.acquire(timeout=5)
    runner.stop()
    assert events == ["ready", "unready: readiness probe failed 2 times: exec test exited 1", "ready"]
