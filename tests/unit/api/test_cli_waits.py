"""Waits the CLI cannot measure show how long they have lasted on a terminal, and nothing for scripts: a catalog
command the server answers slowly (it fetches a git repository first), run in a real pseudo-terminal; and an image
pull's pace and ETA under `--watch`, from the agent's progress lines and their times."""

from __future__ import annotations

import json
import os
import pty
import select
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from api.cli.progress import paced

ROVING = str(Path(sys.executable).with_name("roving"))
SLOW = 2.5  # seconds the server takes: past the ticker's first draw (1 s), as a clone of a large repository


class SlowCatalog(BaseHTTPRequestHandler):
    """Answers `POST /v4/catalog/sources` after SLOW seconds, as the control plane does while git works."""

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        self.rfile.read(int(self.headers.get("content-length", 0)))
        if self.path.endswith(":refresh"):  # on a terminal, add clones the new source at once: nothing to tell here
            body = json.dumps({"id": "s1", "name": "lab", "scope": "group", "owner": "lab", "templates": 0,
                               "error": "", "problems": []}).encode()
            self.send_response(200)
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        time.sleep(SLOW)
        body = json.dumps({"id": "s1", "name": "lab", "scope": "group", "kind": "git"}).encode()
        self.send_response(201)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_: object) -> None:
        pass


@pytest.fixture(scope="module")
def server():
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), SlowCatalog)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def environment(server: str, tmp_path: Path) -> dict[str, str]:
    return {**os.environ, "ROVING_API": server, "ROVING_TOKEN": "t", "XDG_CONFIG_HOME": str(tmp_path),
            "TERM": "xterm", "ROVING_CLI_WAIT": "0"}


def in_terminal(argv: list[str], env: dict[str, str]) -> tuple[int, str]:
    """`roving ARGV` with a pseudo-terminal for standard input, output and error; (exit code, all it wrote)."""
    controller, terminal = pty.openpty()
    done = subprocess.Popen([ROVING, *argv], stdin=terminal, stdout=terminal, stderr=terminal, env=env, close_fds=True)
    os.close(terminal)
    written = b""
    while True:
        ready, _, _ = select.select([controller], [], [], 30)
        if not ready:
            break
        try:
            chunk = os.read(controller, 4096)
        except OSError:  # the terminal closed with the process
            break
        if not chunk:
            break
        written += chunk
    os.close(controller)
    return done.wait(30), written.decode(errors="replace")


def test_adding_a_git_source_shows_how_long_the_server_has_been_at_it_on_a_terminal(server, tmp_path):
    code, shown = in_terminal(["catalog", "source", "add", "lab", "https://git.example/lab.git"],
                              environment(server, tmp_path))
    assert code == 0, shown
    assert "\r\x1b[Kchecking https://git.example/lab.git  0:01" in shown
    assert "\r\x1b[Kchecking https://git.example/lab.git  0:02" in shown  # redrawn in place as it waits
    assert "lab" in shown.split("\r\x1b[K")[-1]  # the line cleared, then the answer as without a terminal


def test_json_output_and_a_pipe_get_no_ticker(server, tmp_path):
    env = environment(server, tmp_path)
    code, shown = in_terminal(["catalog", "source", "add", "lab", "https://git.example/lab.git", "-o", "json"], env)
    assert code == 0 and "checking" not in shown and json.loads(shown)["name"] == "lab"
    piped = subprocess.run([ROVING, "catalog", "source", "add", "lab", "https://git.example/lab.git"], env=env,
                           capture_output=True, text=True, timeout=30)
    assert piped.returncode == 0 and "checking" not in piped.stderr + piped.stdout


def test_a_pull_line_gains_its_pace_and_how_long_the_rest_takes():
    told = [("2026-12-07T10:00:00Z", "pulling docker://pytorch: 4 blobs to fetch"),
            ("2026-12-07T10:00:01Z", "pulling docker://pytorch: 1 of 4 blobs"),
            ("2026-12-07T10:00:05Z", "pulling docker://pytorch: 3 of 4 blobs")]
    assert paced(told) == "pulling docker://pytorch: 3 of 4 blobs  0.5 blobs/s  ETA 0:02"
    assert paced(told[:2]) == "pulling docker://pytorch: 1 of 4 blobs"  # one count: no pace yet
    unpacking = [*told, ("2026-12-07T10:00:09Z", "unpacking docker://pytorch: layer 1 of 4"),
                 ("2026-12-07T10:00:10Z", "unpacking docker://pytorch: layer 2 of 4")]
    assert paced(unpacking) == "unpacking docker://pytorch: layer 2 of 4  1.0 layers/s  ETA 0:02"
