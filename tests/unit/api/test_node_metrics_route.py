"""`GET /v4/metrics/node/{node}`: a node's own metrics in Prometheus text, read from its agent through the control
plane, for cluster admins and the monitoring token only."""

import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from domain.tenancy import Role, Source
from tests.unit.api.harness import Api, token, webhook_token

AGENT = token("agent", Role.USER, source=Source.AGENT)
PAGE = b"# TYPE roving_node_running_allocations gauge\nroving_node_running_allocations 3.0\n"


class AgentMetrics(BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802 (http.server's name)
        status, body = (200, PAGE) if self.path == "/metrics" else (404, b"")
        self.send_response(status)
        self.send_header("Content-Type", "text/plain; version=0.0.4")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def agent_port():
    server = ThreadingHTTPServer(("127.0.0.1", 0), AgentMetrics)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
def api(agent_port):
    api = Api()
    for name, port in (("gpu-1", agent_port), ("quiet-1", None)):
        body = {"name": name, "cpu": 2, "memory": 2**30, "definition": "local", "address": "127.0.0.1",
                "metrics_port": port}
        assert api.request("POST", "/v4/agent/register", AGENT, json=body).status_code == 200
    return api


def test_an_admin_reads_a_nodes_metrics_in_prometheus_text_by_its_name(api):
    answer = api.request("GET", "/v4/metrics/node/gpu-1", api.admin)
    assert answer.status_code == 200, answer.text
    assert answer.headers["content-type"].startswith("text/plain")
    assert "roving_node_running_allocations 3.0" in answer.text


def test_the_monitoring_token_scrapes_a_nodes_metrics(api):
    answer = api.request("GET", "/v4/metrics/node/gpu-1", webhook_token())
    assert answer.status_code == 200 and "roving_node_running_allocations" in answer.text


def test_a_user_may_not_read_a_nodes_metrics_which_count_other_tenants_work(api):
    _, carol = api.organization_with_user("metrics-org", "carol")
    answer = api.request("GET", "/v4/metrics/node/gpu-1", carol)
    assert answer.status_code == 403 and "cluster admins and the monitoring token" in answer.json()["error"]
    assert api.request("GET", "/v4/metrics/node/gpu-1", AGENT).status_code == 403
    assert api.request("GET", "/v4/metrics/node/gpu-1", None).status_code == 401


def test_a_node_without_a_metrics_port_or_unknown_is_404_with_the_reason(api):
    answer = api.request("GET", "/v4/metrics/node/quiet-1", api.admin)
    assert answer.status_code == 404 and "--metrics-port" in answer.json()["error"]
    assert api.request("GET", "/v4/metrics/node/no-such-node", api.admin).status_code == 404


def test_an_agent_that_does_not_answer_is_502_naming_the_node(api, agent_port):
    body = {"name": "gone-1", "cpu": 2, "memory": 2**30, "definition": "local", "address": "127.0.0.1",
            "metrics_port": 1}  # nothing listens on port 1
    assert api.request("POST", "/v4/agent/register", AGENT, json=body).status_code == 200
    answer = api.request("GET", "/v4/metrics/node/gone-1", api.admin)
    assert answer.status_code == 502 and "gone-1" in answer.json()["error"]


class V6Server(ThreadingHTTPServer):
    address_family = socket.AF_INET6


class Redirect(BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802 (http.server's name)
        self.send_response(302)
        self.send_header("Location", f"http://127.0.0.1:{self.server.target}/metrics")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


def register(api, name, address, port):
    body = {"name": name, "cpu": 2, "memory": 2**30, "definition": "local", "address": address, "metrics_port": port}
    return api.request("POST", "/v4/agent/register", AGENT, json=body)


@pytest.mark.parametrize("address", ["evil.example/x#", "127.0.0.1:9100", "user@127.0.0.1", "http://10.0.0.1",
                                     "a b", "fe80::1%eth0", "x" * 300])
def test_an_agent_registering_an_address_that_is_not_a_host_is_refused_naming_the_field(api, address):
    answer = register(api, "odd-1", address, 9100)
    assert answer.status_code == 400, answer.text
    assert answer.json()["errors"][0]["path"].endswith("address")


def test_a_node_registered_without_an_address_is_not_fetched_at_the_control_planes_own_loopback(api, agent_port):
    assert register(api, "blank-1", "", agent_port).status_code == 200
    answer = api.request("GET", "/v4/metrics/node/blank-1", api.admin)
    assert answer.status_code == 404 and "no address" in answer.json()["error"]


def test_an_ipv6_agent_is_fetched_at_its_bracketed_address():
    server = V6Server(("::1", 0), AgentMetrics)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        api = Api()
        assert register(api, "six-1", "::1", server.server_address[1]).status_code == 200
        answer = api.request("GET", "/v4/metrics/node/six-1", api.admin)
        assert answer.status_code == 200 and "roving_node_running_allocations" in answer.text
    finally:
        server.shutdown()
        server.server_close()


def test_a_redirect_from_an_agent_is_not_followed(api, agent_port):
    server = ThreadingHTTPServer(("127.0.0.1", 0), Redirect)
    server.target = agent_port
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        assert register(api, "moved-1", "127.0.0.1", server.server_address[1]).status_code == 200
        answer = api.request("GET", "/v4/metrics/node/moved-1", api.admin)
        assert answer.status_code == 502 and "HTTP 302" in answer.json()["error"]
    finally:
        server.shutdown()
        server.server_close()
