"""Readiness and liveness probes for services: the Fuzzfile's `Probe` (exec, http-get or tcp-socket) checked in a
stoppable thread."""

from __future__ import annotations

import http.client
import socket
import subprocess
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from domain.fuzzfile.hooks import LIVENESS_REASON
from domain.fuzzfile.schema import ExecAction, HTTPGetAction, Probe, TCPSocketAction

PROBE_FIELDS = ("readiness_probe", "liveness_probe")


def kebab_keys(value: Any) -> Any:
    """A probe's keys as the Fuzzfile spells them (`http-get`); a run spec from an older agent spelled them
    `http_get`: both are read."""
    if isinstance(value, dict):
        return {str(k).replace("_", "-"): kebab_keys(v) for k, v in value.items()}
    if isinstance(value, list):
        return [kebab_keys(v) for v in value]
    return value


def with_kebab_probes(spec: dict[str, Any]) -> dict[str, Any]:
    """A run spec (as builtins) whose probes decode into the Fuzzfile's `Probe` whichever spelling they came in."""
    return {**spec, **{key: kebab_keys(spec[key]) for key in PROBE_FIELDS if spec.get(key) is not None}}


def check_exec(action: ExecAction, timeout: float, cwd: Path | None, env: dict[str, str] | None) -> str | None:
    """None when the command exits 0 in time, otherwise why not."""
    try:
        done = subprocess.run(
            action.command, cwd=cwd, env=env, timeout=timeout,
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired:
        return f"exec {action.command[0]} timed out after {timeout:g}s"
    except OSError as error:
        return f"exec {action.command[0]}: {error.strerror}"
    return None if done.returncode == 0 else f"exec {action.command[0]} exited {done.returncode}"


def check_http(action: HTTPGetAction, timeout: float) -> str | None:
    """None on a 2xx or 3xx answer."""
    host = action.host or "127.0.0.1"
    kind = http.client.HTTPSConnection if (action.scheme or "").upper() == "HTTPS" else http.client.HTTPConnection
    conn = kind(host, action.port, timeout=timeout)
    try:
        conn.request("GET", action.path or "/")
        status = conn.getresponse().status
    except OSError as error:
        return f"http-get {host}:{action.port}{action.path}: {error}"
    finally:
        conn.close()
    return None if 200 <= status < 400 else f"HTTP {status} from {action.path or '/'}"


def check_tcp(action: TCPSocketAction, timeout: float) -> str | None:
    """None when a connection opens."""
    host = action.host or "127.0.0.1"
    try:
        socket.create_connection((host, action.port), timeout=timeout).close()
    except OSError as error:
        return f"tcp-socket {host}:{action.port}: {error}"
    return None


def check(spec: Probe, cwd: Path | None = None, env: dict[str, str] | None = None) -> str | None:
    """One probe attempt: None when it passed, else the reason it failed."""
    timeout = spec.timeout_seconds or 1.0
    if spec.exec is not None:
        return check_exec(spec.exec, timeout, cwd, env)
    if spec.http_get is not None:
        return check_http(spec.http_get, timeout)
    if spec.tcp_socket is not None:
        return check_tcp(spec.tcp_socket, timeout)
    return "the probe has none of exec, http-get or tcp-socket"


class ProbeRunner:
    """Probes until `success_threshold` passes in a row (on_ready) or `failure_threshold` fails (on_failed).

    With `on_unready`, probing goes on after the first readiness: `failure_threshold` failures in a row call
    on_unready (the service leaves its endpoint but keeps running), `success_threshold` passes call on_ready again.
    Without it, the first readiness ends the probing."""

    def __init__(
        self, spec: Probe, on_ready: Callable[[], None], on_failed: Callable[[str], None],
        cwd: Path | None = None, env: dict[str, str] | None = None,
        on_unready: Callable[[str], None] | None = None,
    ):
        self.spec, self.on_ready, self.on_failed, self.cwd, self.env = spec, on_ready, on_failed, cwd, env
        self.on_unready = on_unready
        self.watch = False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name="probe")

    def start(self) -> ProbeRunner:
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop probing; an attempt in flight finishes within its timeout."""
        self._stop.set()
        if self._thread.is_alive() and threading.current_thread() is not self._thread:
            self._thread.join()

    def _run(self) -> None:
        spec = self.spec
        if self.watch:
            return self._watch()
        period = spec.period_seconds or 10.0
        needed_ok, allowed_fail = spec.success_threshold or 1, spec.failure_threshold or 3
        passed = failed = 0
        ready: bool | None = None  # None: never ready yet
        if self._stop.wait(spec.initial_delay_seconds or 0):
            return
        while not self._stop.is_set():
            failure = check(spec, self.cwd, self.env)
            passed, failed = (passed + 1, 0) if failure is None else (0, failed + 1)
            if self._stop.is_set():
                return
            if passed >= needed_ok and ready is not True:
                ready = True
                self.on_ready()
                if self.on_unready is None:
                    return
            elif failed >= allowed_fail and ready is None:
                return self.on_failed(f"readiness probe failed {failed} times: {failure}")
            elif failed >= allowed_fail and ready and self.on_unready is not None:
                ready = False
                self.on_unready(f"readiness probe failed {failed} times: {failure}")
            if self._stop.wait(period):
                return

    def _watch(self) -> None:
        """Liveness: probe for as long as the service runs; `failure_threshold` failures in a row is a hang."""
        spec = self.spec
        period, allowed_fail, failed = spec.period_seconds or 10.0, spec.failure_threshold or 3, 0
        if self._stop.wait(spec.initial_delay_seconds or 0):
            return
        while not self._stop.is_set():
            failure = check(spec, self.cwd, self.env)
            failed = 0 if failure is None else failed + 1
            if self._stop.is_set():
                return
            if failed >= allowed_fail:
                return self.on_failed(f"{LIVENESS_REASON} {failed} times: {failure}")
            if self._stop.wait(period):
                return


def liveness(spec: Probe, on_failed: Callable[[str], None], cwd: Path | None = None) -> ProbeRunner:
    """A probe that watches a running service until it stops, calling `on_failed` once when it hangs."""
    runner = ProbeRunner(spec, lambda: None, on_failed, cwd=cwd)
    runner.watch = True
    return runner
