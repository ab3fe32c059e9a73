"""`GET /v4/metrics/node/{node}`: a node's own metrics in Prometheus text, read from its agent through the control
plane, for cluster admins and the monitoring token only."""

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
