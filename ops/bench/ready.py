"""Waiting for a control plane a bench started: `/readyz` answers 200 and the admin token is written."""

from __future__ import annotations

import http.client
import subprocess
import time
from pathlib import Path


def wait_ready(child: subprocess.Popen, data_dir: str, port: int, seconds: float, every: float = 0.1) -> bool:
    """True once it is ready; False when `seconds` passed. A child that exits is a SystemExit naming its code."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if child.poll() is not None:
            raise SystemExit(f"the control plane exited with {child.returncode}")
        try:
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            connection.request("GET", "/readyz")
            if connection.getresponse().status == 200 and (Path(data_dir) / "admin.token").exists():
                return True
        except OSError:
            pass
        time.sleep(every)
    return False
