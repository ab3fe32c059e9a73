"""Endpoint routes and the proxy, in process, against a real HTTP service on a local port."""

from __future__ import annotations

import asyncio
import gzip
import json
import threading
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from uuid import uuid4

import httpx
import pytest
from starlette.applications import Starlette

from api.http.routes import proxy
from domain.app.ids import allocation_id, endpoint_id
from tests.unit.api.harness import Api

BIG = bytes(range(256)) * 1024  # 256 KiB: past the size the proxy reads whole
ZIPPED = gzip.compress(b"compressed answer")


class Echo(BaseHTTPRequestHandler):
    """Answers with the headers it received; `/events` streams two server-sent events; `/big` and `/gzip`
    send fixed bodies; POST echoes its body."""

    def fixed(self, body: bytes, **headers: str) -> None:
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        for name, value in headers.items():
            self.send_header(name.replace("_", "-"), value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def do_HEAD(self) -> None:  # noqa: N802 - http.server's name
        self.fixed(BIG)

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        self.fixed(self.rfile.read(int(self.headers["Content-Length"])), Content_Type="application/octet-stream")

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        if self.path == "/big":
            return self.fixed(BIG)
        if self.path == "/gzip":
            return self.fixed(ZIPPED, Content_Encoding="gzip", Content_Type="text/plain")
        if self.path == "/events":
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.end_headers()
            for n in (1, 2):
                self.wfile.write(f"data: {n}\n\n".encode())
                self.wfile.flush()
            return
        payload = json.dumps({"path": self.path, "headers": {k.lower(): v for k, v in self.headers.items()}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def service():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Echo)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


def definition(port: int) -> str:
    return f"""
version: v4
services:
  model:
    image: {{uri: docker://alpine}}
    script: serve
    network:
      ports: [{{name: http, port: {port}}}]
      endpoints: [{{name: llm, port-name: http, persistent: true}}]
"""


def bound_api(port: int, scope: str = "user", ready: bool = True, env: dict | None = None,
              listening: tuple[int, ...] | None = None) -> tuple[Api, str]:
    """An API (settings from `env`) whose user alice owns endpoint `llm`, bound to the service on `port` once ready;
    its agent says the service listens on `listening` (default: that port)."""
    api = Api(env)
    _, alice = api.organization_with_user("acme", "alice")
    created = api.request("POST", "/v4/endpoints", alice, json={"name": "llm", "scope": scope})
    assert created.status_code == 201, created.text
    assert api.request("POST", "/v4/workflows", alice, json={"definition": definition(port)}).status_code == 201
    if ready:
        roving, now = api.services.roving, datetime.now(UTC)
        node, _ = roving.register_node("n1", 4, 8 << 30, {}, {}, "pool", "127.0.0.1", 9100, now)
        workflow_id = roving.repository.get(endpoint_id("llm")).pending.workflow_id
        alloc = allocation_id(workflow_id, "model", 1)
        roving.report(node, alloc, roving.place(alloc, [node], "scheduler", now), "ready", None, "", now,
                      listening=(port,) if listening is None else listening)
    api.services.tailer.wait_for(api.services.roving.last_position)
    return api, alice


def through(app, *requests: tuple[str, dict], method: str = "GET", content: bytes | None = None) -> list[httpx.Response]:
    """Requests on one event loop (the proxy pools upstream connections per app), then the pool is closed."""
    async def run() -> list[httpx.Response]:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://roving.test") as client:
            try:
                return [await client.request(method, path, headers=headers, content=content)
                        for path, headers in requests]
            finally:
                pooled = getattr(app.state, "proxy_client", None)
                if pooled is not None:
                    await pooled.aclose()
    return asyncio.run(run())


def bare_proxy(api: Api) -> Starlette:
    """The proxy routes without the API's auth middleware, as served under `/endpoints/`."""
    app = Starlette(routes=proxy.routes)
    app.state.services = api.services
    return app


def test_create_list_show_and_delete_an_endpoint(service):
    api, alice = bound_api(service, ready=False)
    listed = api.request("GET", "/v4/endpoints", alice).json()["endpoints"]
    assert [(e["name"], e["status"]) for e in listed] == [("llm", "pending")]
    shown = api.request("GET", "/v4/endpoints/llm", alice).json()
    assert shown["path"] == "/endpoints/llm/" and "waiting for workflow" in shown["reason"]
    assert api.request("DELETE", f"/v4/endpoints/{shown['id']}", alice).json()["deleted"] is True
    assert api.request("GET", "/v4/endpoints/llm", alice).status_code == 404


def test_another_users_endpoint_is_not_found(service):
    api, _ = bound_api(service, ready=False)
    _, bob = api.organization_with_user("other", "bob")
    assert api.request("GET", "/v4/endpoints/llm", bob).status_code == 404
    assert api.request("GET", "/v4/endpoints", bob).json()["endpoints"] == []


def test_a_bad_name_is_a_400_naming_the_problem(service):
    api, alice = bound_api(service, ready=False)
    answer = api.request("POST", "/v4/endpoints", alice, json={"name": "Bad Name"})
    assert answer.status_code == 400 and "lowercase" in answer.text


def test_the_proxy_forwards_the_service_authorization_and_never_the_roving_token(service):
    api, alice = bound_api(service)
    (answer,) = through(bare_proxy(api), ("/endpoints/llm/v1/models?x=1",
                                          {"FB-Authorization": f"Bearer {alice}", "Authorization": "Bearer sk-own"}))
    assert answer.status_code == 200, answer.text
    seen = answer.json()
    assert seen["path"] == "/v1/models?x=1"
    assert seen["headers"]["authorization"] == "Bearer sk-own"
    assert "fb-authorization" not in seen["headers"] and alice not in json.dumps(seen)


def test_through_the_whole_api_the_services_own_authorization_passes_untouched(service):
    api, alice = bound_api(service)
    (answer,) = through(api.app, ("/endpoints/llm/", {"FB-Authorization": f"Bearer {alice}",
                                                      "Authorization": "Bearer sk-own"}))
    assert answer.status_code == 200, answer.text
    assert answer.json()["headers"]["authorization"] == "Bearer sk-own"


def test_through_the_whole_api_a_public_endpoint_needs_no_token(service):
    api, _ = bound_api(service, scope="public")
    (answer,) = through(api.app, ("/endpoints/llm/", {}))
    assert answer.status_code == 200, answer.text


def test_a_roving_token_sent_in_authorization_is_honoured_but_never_forwarded(service):
    api, alice = bound_api(service)
    (answer,) = through(api.app, ("/endpoints/llm/", {"Authorization": f"Bearer {alice}"}))
    assert answer.status_code == 200, answer.text
    assert "authorization" not in answer.json()["headers"]


def test_server_sent_events_pass_through(service):
    api, alice = bound_api(service)
    (answer,) = through(bare_proxy(api), ("/endpoints/llm/events", {"FB-Authorization": f"Bearer {alice}"}))
    assert answer.headers["content-type"] == "text/event-stream"
    assert answer.text == "data: 1\n\ndata: 2\n\n"


def test_a_body_too_large_to_buffer_streams_through_intact(service):
    api, alice = bound_api(service)
    (answer,) = through(bare_proxy(api), ("/endpoints/llm/big", {"FB-Authorization": f"Bearer {alice}"}))
    assert answer.status_code == 200 and answer.content == BIG
    assert answer.headers["content-length"] == str(len(BIG))


def test_a_compressed_answer_reaches_the_caller_as_the_service_sent_it(service):
    api, alice = bound_api(service)
    (answer,) = through(bare_proxy(api), ("/endpoints/llm/gzip", {"FB-Authorization": f"Bearer {alice}"}))
    assert answer.headers["content-encoding"] == "gzip"
    assert answer.headers["content-length"] == str(len(ZIPPED))
    assert answer.text == "compressed answer"


def test_a_posted_body_reaches_the_service_and_head_sends_no_body(service):
    api, alice = bound_api(service)
    auth = {"FB-Authorization": f"Bearer {alice}"}
    (posted,) = through(bare_proxy(api), ("/endpoints/llm/v1/infer", auth), method="POST", content=b"x" * 5000)
    (head,) = through(bare_proxy(api), ("/endpoints/llm/big", auth), method="HEAD")
    assert posted.status_code == 200 and posted.content == b"x" * 5000
    assert head.status_code == 200 and head.content == b"" and head.headers["content-length"] == str(len(BIG))


def test_scope_rules_decide_who_reaches_the_service(service):
    api, alice = bound_api(service)
    _, bob = api.organization_with_user("other", "bob")
    anonymous, stranger = through(bare_proxy(api), ("/endpoints/llm/", {}),
                                  ("/endpoints/llm/", {"FB-Authorization": f"Bearer {bob}"}))
    assert anonymous.status_code == 401 and "FB-Authorization" in anonymous.json()["error"]
    assert stranger.status_code == 404


def test_a_public_endpoint_needs_no_token(service):
    api, _ = bound_api(service, scope="public")
    (answer,) = through(bare_proxy(api), ("/endpoints/llm/", {}))
    assert answer.status_code == 200


def test_no_ready_binding_is_a_503_with_the_reason_and_unknown_is_a_404(service):
    api, alice = bound_api(service, ready=False)
    auth = {"FB-Authorization": f"Bearer {alice}"}
    waiting, unknown = through(bare_proxy(api), ("/endpoints/llm/", auth), (f"/endpoints/{uuid4()}/", auth))
    assert waiting.status_code == 503 and "waiting for workflow" in waiting.json()["error"]
    assert unknown.status_code == 404


def test_a_failed_lookup_is_a_503_not_a_404(service, monkeypatch):
    api, alice = bound_api(service)

    def broken(key: str) -> None:
        raise RuntimeError("view unavailable")

    monkeypatch.setattr(api.services.views.endpoints, "find", broken)
    (answer,) = through(bare_proxy(api), ("/endpoints/llm/", {"FB-Authorization": f"Bearer {alice}"}))
    assert answer.status_code == 503 and "lookup failed" in answer.json()["error"]


def test_a_submission_may_ask_for_a_start_takeover_and_a_wrong_strategy_is_named(service):
    api, alice = bound_api(service)
    serving = api.services.roving.repository.get(endpoint_id("llm")).binding.workflow_id
    taken = api.request("POST", "/v4/workflows", alice, json={"definition": definition(service),
                                                               "endpoint_strategy": "start"})
    assert taken.status_code == 201, taken.text
    assert api.request("GET", f"/v4/workflows/{serving}", alice).json()["status"] == "CANCELED"
    wrong = api.request("POST", "/v4/workflows?endpoint_strategy=sideways", alice, content=definition(service),
                        headers={"content-type": "application/yaml"})
    assert wrong.status_code == 400 and wrong.json()["errors"][0]["path"] == "endpoint_strategy", wrong.text


def test_a_roving_token_sent_in_both_headers_is_never_forwarded(service):
    api, alice = bound_api(service)
    for sent in (f"Bearer {alice}", f"bearer {alice}", f"Token {alice}", alice):
        (answer,) = through(api.app, ("/endpoints/llm/", {"FB-Authorization": f"Bearer {alice}", "Authorization": sent}))
        assert answer.status_code == 200, answer.text
        seen = answer.json()["headers"]
        assert "authorization" not in seen and alice not in json.dumps(seen), sent


def test_a_port_the_service_declares_but_does_not_listen_on_is_a_502_naming_it(service):
    """The Echo server stands for what holds the port: another tenant's service, or the API itself."""
    api, alice = bound_api(service, listening=(service + 1,))
    (answer,) = through(api.app, ("/endpoints/llm/", {"FB-Authorization": f"Bearer {alice}"}))
    assert answer.status_code == 502
    assert f"does not listen on port {service}" in answer.json()["error"] and "headers" not in answer.text


def test_a_readiness_without_ports_is_a_502_and_the_service_is_not_reached(service):
    api, alice = bound_api(service, scope="public", listening=())
    (answer,) = through(api.app, ("/endpoints/llm/", {}))
    assert answer.status_code == 502 and "listen on no port" in answer.json()["error"]
