"""The CLI's client lets go of its connections when a command is done, not when the garbage collector runs."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from api.cli.client import Client


@pytest.fixture
def server():
    """A keep-alive JSON server counting the connections its clients closed."""
    closed: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:
            data = json.dumps({"ok": True}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def finish(self) -> None:
            super().finish()
            closed.append(self.client_address[1])

        def log_message(self, *args) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}", closed
    httpd.shutdown()
    httpd.server_close()


def test_a_client_closes_its_keep_alive_connection_when_done(server):
    url, closed = server
    with Client(url) as client:
        assert client.get("/v4/anything") == {"ok": True}
        assert client.get("/v4/again") == {"ok": True}  # one connection, kept alive between requests
    deadline = time.monotonic() + 5
    while not closed and time.monotonic() < deadline:
        time.sleep(0.01)
    assert len(closed) == 1
