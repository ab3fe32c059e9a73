"""A tiny stand-in for the agent routes of the HTTP API, on 127.0.0.1, recording what the agent sends."""

from __future__ import annotations

import hashlib
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlparse
from uuid import UUID

from domain.agent_protocol import Event, Report

NODE_ID = "00000000-0000-4000-8000-00000000000e"  # the node the fake registers (ids are UUIDs, as the protocol's)
A1, A2 = "00000000-0000-4000-8000-0000000000a1", "00000000-0000-4000-8000-0000000000a2"


def alloc(n: int) -> str:
    """An allocation id for tests that make several."""
    return f"00000000-0000-4000-8000-0000000000a{n}"


# The run spec's fields every control plane has always sent (domain/agent_start.Start's first block), as neutral
# values: a test names only what it is about, and the fake answers a whole run spec.
WIRE: dict[str, Any] = {
    "job": "", "task_id": None, "kind": "job", "image": "", "script": None, "command": None, "args": None, "env": {},
    "cwd": None, "files": {}, "execute_timeout_seconds": None, "memory_bytes": 0, "cpu_cores": 1, "account_id": "",
    "owner_id": "", "readiness_probe": None, "ports": [], "mounts": {}}


def wire(allocation_id: str, epoch: int = 1, **fields: Any) -> dict[str, Any]:
    """A run spec as the assignments answer carries it."""
    return {"allocation_id": allocation_id, "epoch": epoch, "workflow_id": "wf-1", "stage": allocation_id,
            **WIRE, **fields}


def report(allocation_id: str, epoch: int, event: Event, **fields: Any) -> Report:
    """A report of the fake's node, as the agent puts it in its outbox."""
    return Report(node_id=UUID(NODE_ID), allocation_id=UUID(allocation_id), epoch=epoch, event=event, **fields)


class FakeApi:
    """Serves register / heartbeat / assignments / reports / config; tests change its answers as they go."""

    def __init__(self, token: str = "tok", node_token: str | None = None) -> None:
        self.token = token
        self.node_token = node_token  # registration answers it as the node's own token, when set
        self.refused_tokens: set[str] = set()  # revoked or expired: 401
        self.tokens_seen: list[tuple[str, str]] = []  # (path, bearer token) of every request
        self.epoch = 1
        self.lock = threading.Lock()
        self.registrations: list[dict] = []
        self.heartbeats: list[dict] = []
        self.reports: list[dict] = []
        self.start: list[dict] = []
        self.stop: list[dict] = []
        self.stale_heartbeats = 0
        self.refused_reports: set[tuple[str, str]] = set()
        self.unavailable_reports = 0  # the next N reports answer 503 (the log unreachable, a write race outlasted)
        self.batch_reports = True  # False: an older API without `POST /v4/agent/reports:batch` (404)
        self.batches: list[int] = []  # reports in each batch request
        self.most_reports: int | None = None  # a batch of more reports is too large a body (413), as behind a proxy
        self.knows_note = True  # False: an API older than the `note` report (its body does not decode: 400)
        self.config: dict | None = None  # what GET /v4/agent/config answers; None -> 404
        self.position: int | None = None  # the log position its assignments answers say (None: an older API's)
        self.long_poll = False  # hold an assignments poll with `wait` until its answer differs from If-None-Match
        self.polls: list[tuple[float, dict, str | None]] = []  # (monotonic time, query, If-None-Match)
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def __enter__(self) -> FakeApi:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join()

    def events(self, allocation_id: str) -> list[tuple[str, int, int | None]]:
        with self.lock:
            return [(r["event"], r["epoch"], r["exit_code"]) for r in self.reports if r["allocation_id"] == allocation_id]

    def answer(self, method: str, path: str, body: dict) -> tuple[int, dict]:
        with self.lock:
            if (method, path) == ("POST", "/v4/agent/register"):
                self.registrations.append(body)
                own = {"token": self.node_token} if self.node_token else {}
                return 200, {"node_id": NODE_ID, "epoch": len(self.registrations)} | own
            if (method, path) == ("POST", "/v4/agent/heartbeat"):
                self.heartbeats.append(body)
                if self.stale_heartbeats:
                    self.stale_heartbeats -= 1
                    return 409, {"error": "stale epoch"}
                return 200, {"ok": True}
            if (method, path) == ("GET", "/v4/agent/assignments"):
                return 200, self.assigned()
            if path.startswith("/v4/agent/reports") and not self.knows_note and "note" in json.dumps(body):
                return 400, {"error": "Invalid enum value 'note' - at `$.event`"}
            if (method, path) == ("POST", "/v4/agent/reports"):
                if self.unavailable_reports:
                    self.unavailable_reports -= 1
                    return 503, {"error": "the event log is unreachable"}
                return self._record(body)
            if (method, path) == ("POST", "/v4/agent/reports:batch") and self.batch_reports:
                if self.unavailable_reports:  # the whole request: as the API answers a log outage
                    self.unavailable_reports -= 1
                    return 503, {"error": "the event log is unreachable"}
                if self.most_reports is not None and len(body["reports"]) > self.most_reports:
                    return 413, {"error": "request body too large"}
                self.batches.append(len(body["reports"]))
                results = [self._record(report) for report in body["reports"]]
                return 200, {"results": [{"status": status, **answer} for status, answer in results]}
            if (method, path) == ("GET", "/v4/agent/config") and self.config is not None:
                return 200, self.config
            return 404, {"error": "not found"}

    def starts(self) -> list[dict]:
        """The run specs to start, each whole (a test's dict names only what it is about)."""
        return [WIRE | item for item in self.start]

    def assigned(self) -> dict:
        """The assignments answer's body (under the lock)."""
        at = {} if self.position is None else {"position": self.position}
        return {"start": self.starts(), "stop": list(self.stop)} | at

    def _record(self, body: dict) -> tuple[int, dict]:
        self.reports.append(body)
        refused = (body["allocation_id"], body["event"]) in self.refused_reports
        return (409, {"error": "stale epoch", "code": "stale_epoch"}) if refused else (200, {})

    def assignments(self, query: dict, known: str | None) -> tuple[int, dict, dict]:
        """The assignments answer with its ETag, held as a long-polling server holds it when asked to."""
        with self.lock:
            self.polls.append((time.monotonic(), dict(query), known))
        deadline = time.monotonic() + float(query.get("wait") or 0) if self.long_poll else 0.0
        while True:
            with self.lock:
                answer = self.assigned()
            tag = '"' + hashlib.sha1(json.dumps(answer, sort_keys=True).encode()).hexdigest() + '"'
            news = tag != known if known else bool(answer["start"] or answer["stop"])
            if news or time.monotonic() >= deadline:
                return 200, answer, {"ETag": tag}
            time.sleep(0.01)

    def _handler(self):
        api = self

        class Handler(BaseHTTPRequestHandler):
            def _serve(self) -> None:
                bearer = (self.headers.get("Authorization") or "").removeprefix("Bearer ")
                with api.lock:
                    api.tokens_seen.append((urlparse(self.path).path, bearer))
                if bearer not in {api.token, api.node_token} or bearer in api.refused_tokens:
                    return self._send(401, {"error": "unauthorized"})
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length)) if length else {}
                url = urlparse(self.path)
                body |= {k: v[0] for k, v in parse_qs(url.query).items()}
                if (self.command, url.path) == ("GET", "/v4/agent/assignments"):
                    return self._send(*api.assignments(body, self.headers.get("If-None-Match")))
                self._send(*api.answer(self.command, url.path, body))

            def _send(self, status: int, payload: dict, headers: dict | None = None) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = _serve

            def log_message(self, *args) -> None:
                pass

        return Handler
