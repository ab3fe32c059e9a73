"""Real servers on loopback for transfer tests: moto's S3 server as a subprocess, and a small HTTP file server."""

from __future__ import annotations

import hashlib
import json
import socket
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class S3Server:
    """`python -m moto.server` on a free port; any access key opens it."""

    def __init__(self) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self._client = None
        self.process = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(self.port)],
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                httpx.get(self.url, timeout=1)
                return
            except httpx.TransportError:
                time.sleep(0.1)
        self.stop()
        raise RuntimeError("moto's S3 server did not start")

    def secret(self) -> str:
        return ('{"access_key_id": "AKIDTEST", "secret_access_key": "hunter2-s3-key", '
                f'"region": "us-east-1", "endpoint": "{self.url}"}}')

    def client(self):
        """One client for the tests' own calls, closed with the server (each new one kept a connection pool)."""
        if self._client is None:
            import boto3
            self._client = boto3.client("s3", endpoint_url=self.url, aws_access_key_id="AKIDTEST",
                                        aws_secret_access_key="hunter2-s3-key", region_name="us-east-1")
        return self._client

    def stop(self) -> None:
        if self._client is not None:
            self._client.close()
        self.process.terminate()
        self.process.wait(10)


class Files(ThreadingHTTPServer):
    """GET serves `files` by path (404 otherwise; `flaky` paths answer 503 that many times first); PUT stores."""

    def __init__(self) -> None:
        self.files: dict[str, bytes] = {}
        self.flaky: dict[str, int] = {}
        self.puts: dict[str, bytes] = {}
        super().__init__(("127.0.0.1", 0), _Handler)
        threading.Thread(target=self.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class _Handler(BaseHTTPRequestHandler):
    server: Files

    def do_GET(self) -> None:  # noqa: N802 - the http.server spelling
        if self.server.flaky.get(self.path, 0) > 0:
            self.server.flaky[self.path] -= 1
            self._answer(503, b"busy")
        elif self.path in self.server.files:
            self._answer(200, self.server.files[self.path])
        else:
            self._answer(404, b"no such file")

    def do_PUT(self) -> None:  # noqa: N802
        self.server.puts[self.path] = self.rfile.read(int(self.headers["Content-Length"]))
        self._answer(201, b"")

    def _answer(self, status: int, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args) -> None:
        pass


class Hub(ThreadingHTTPServer):
    """The few Hugging Face Hub routes huggingface_hub's snapshot_download asks of `HF_ENDPOINT`, for one model
    repository `files` (name -> bytes); a `token` set here is required as a bearer token."""

    COMMIT = "0" * 39 + "1"

    def __init__(self, repo: str, files: dict[str, bytes], token: str = "") -> None:
        self.repo, self.files, self.token = repo, files, token
        super().__init__(("127.0.0.1", 0), _HubHandler)
        threading.Thread(target=self.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class _HubHandler(BaseHTTPRequestHandler):
    server: Hub

    def do_GET(self) -> None:  # noqa: N802
        self._route(head=False)

    def do_HEAD(self) -> None:  # noqa: N802
        self._route(head=True)

    def _route(self, head: bool) -> None:
        hub, path = self.server, self.path.split("?")[0]
        if hub.token and self.headers.get("Authorization") != f"Bearer {hub.token}":
            return self._answer(401, b"unauthorized", {"X-Error-Code": "RepoNotFound"}, head)
        api = f"/api/models/{hub.repo}"
        if path.startswith(api + "/tree/"):
            tree = [{"type": "file", "path": name, "size": len(body), "oid": hashlib.sha1(body).hexdigest()}
                    for name, body in hub.files.items()]
            return self._answer(200, json.dumps(tree).encode(), {"Content-Type": "application/json"}, head)
        if path.startswith(api):
            info = {"id": hub.repo, "sha": hub.COMMIT, "siblings": [{"rfilename": name} for name in hub.files]}
            return self._answer(200, json.dumps(info).encode(), {"Content-Type": "application/json"}, head)
        name = path.removeprefix(f"/{hub.repo}/resolve/").partition("/")[2]
        if path.startswith(f"/{hub.repo}/resolve/") and name in hub.files:
            body = hub.files[name]
            headers = {"X-Repo-Commit": hub.COMMIT, "ETag": f'"{hashlib.sha1(body).hexdigest()}"'}
            return self._answer(200, body, headers, head)
        self._answer(404, b"not found", {"X-Error-Code": "EntryNotFound"}, head)

    def _answer(self, status: int, body: bytes, headers: dict[str, str], head: bool) -> None:
        self.send_response(status)
        for key, value in headers.items():
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if not head:
            self.wfile.write(body)

    def log_message(self, *args) -> None:
        pass
