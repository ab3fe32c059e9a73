"""Prometheus and Alertmanager for `roving up --monitoring`: the Debian binaries, started on free loopback
ports with our configs and data under `<data dir>/monitoring`, tied to our life, stopped with us.

Like the embedded nats-server (adapters.nats_owner.death_signal), each gets SIGTERM when the thread that
started it ends, so a killed `roving up` leaves neither behind."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from adapters.monitoring_config import MonitoringPlan
from adapters.nats_owner import death_signal
from adapters.nats_server import free_ports

PACKAGES = "prometheus prometheus-alertmanager"
BINARIES = {"prometheus": ("ROVING_PROMETHEUS", ("prometheus",)),
            "alertmanager": ("ROVING_ALERTMANAGER", ("prometheus-alertmanager", "alertmanager"))}


class MonitoringError(RuntimeError):
    """Prometheus or Alertmanager could not be found or started; the message names the fix."""


def find_binaries(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """Each binary from its ROVING_* variable, else PATH; one error naming every missing one and the packages."""
    env = os.environ if env is None else env
    found, missing = {}, []
    for part, (variable, names) in BINARIES.items():
        candidates = [env.get(variable)] + [shutil.which(name, path=env.get("PATH")) for name in names]
        path = next((c for c in candidates if c and os.access(c, os.X_OK)), None)
        if path is None:
            missing.append(f"{names[0]} (or {variable})")
        else:
            found[part] = path
    if missing:
        raise MonitoringError(f"--monitoring needs {' and '.join(missing)}, not found on PATH: "
                              f"install them with `apt-get install {PACKAGES}`")
    return found


@dataclass
class Daemon:
    """One child process with a readiness URL, its output appended to a log file."""

    name: str
    argv: list[str]
    port: int
    log_path: Path
    process: subprocess.Popen | None = field(default=None, repr=False)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen(self.argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                            start_new_session=True, preexec_fn=death_signal(os.getpid()))

    def wait_ready(self, deadline: float) -> None:
        while time.monotonic() < deadline:
            if self.process is not None and self.process.poll() is not None:
                tail = self.log_path.read_text(errors="replace").strip().splitlines()[-3:]
                raise MonitoringError(f"{self.name} exited at start: {' '.join(tail)} (log: {self.log_path})")
            try:
                with urllib.request.urlopen(self.url + "/-/ready", timeout=1) as answer:
                    if answer.status == 200:
                        return
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(0.1)
        raise MonitoringError(f"{self.name} did not become ready on {self.url}; see {self.log_path}")

    def stop(self, grace: float = 10.0) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.terminate()
        try:
            self.process.wait(grace)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


class Monitoring:
    """Prometheus scraping Roving and its agents, Alertmanager posting to Roving's webhook."""

    def __init__(self, data_dir: Path, api: str, interval: float, node_exporter_port: int = 9100,
                 binaries: dict[str, str] | None = None) -> None:
        self.dir = (data_dir / "monitoring").resolve()
        self.binaries = binaries or find_binaries()
        am_port, prom_port = free_ports(2)
        self.plan = MonitoringPlan(api=api, token_file=(data_dir / "alertmanager.token").resolve(),
                                   alertmanager_port=am_port, interval=interval, node_exporter_port=node_exporter_port)
        self.alertmanager = Daemon("alertmanager", [
            self.binaries["alertmanager"], f"--config.file={self.dir / 'alertmanager.yml'}",
            f"--storage.path={self.dir / 'alertmanager'}", f"--web.listen-address=127.0.0.1:{am_port}",
            "--cluster.listen-address=",  # one instance: no gossip port
        ], am_port, self.dir / "alertmanager.log")
        self.prometheus = Daemon("prometheus", [
            self.binaries["prometheus"], f"--config.file={self.dir / 'prometheus.yml'}",
            f"--storage.tsdb.path={self.dir / 'prometheus'}", f"--web.listen-address=127.0.0.1:{prom_port}",
        ], prom_port, self.dir / "prometheus.log")

    def start(self, timeout: float = 30.0) -> Monitoring:
        self.dir.mkdir(parents=True, exist_ok=True)
        (self.dir / "prometheus.yml").write_text(self.plan.prometheus())
        (self.dir / "alertmanager.yml").write_text(self.plan.alertmanager())
        deadline = time.monotonic() + timeout
        try:
            for daemon in (self.alertmanager, self.prometheus):
                daemon.start()
                daemon.wait_ready(deadline)
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        for daemon in (self.prometheus, self.alertmanager):
            daemon.stop()
