"""The autoscaler's Prometheus queries over HTTP: against a fake server speaking Prometheus' API, the loop that uses
them, and one real Prometheus scraping a tiny exporter (skipped where prometheus is not installed)."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import threading
import time
import urllib.parse
from collections.abc import Iterator
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from uuid import uuid4

import pytest

from adapters.monitoring_config import replicas_job
from adapters.prometheus_query import PrometheusQueries
from adapters.traffic import EndpointTraffic
from api.composition.autoscaling import AutoscalerLoop
from domain.autoscale import Pool, PoolRule
from domain.fuzzfile.blocks import ScalingMetric
from domain.promql import QueryError, parse_query
from tests.unit.autoscale.test_autoscaler_loop import Recorder, views

NOW = datetime(2026, 1, 1, tzinfo=UTC)
RULE = PoolRule(0, 4, (ScalingMetric(name="queue", target=10, query="sum(queue_depth)"),), cooldown=0)


class FakePrometheus:
    """Answers /api/v1/query with `status` and `body`, and keeps the queries it was asked."""

    def __init__(self) -> None:
        self.status, self.body, self.asked = 200, b"", []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                url = urllib.parse.urlsplit(self.path)
                fake.asked.append((url.path, urllib.parse.parse_qs(url.query).get("query", [""])[0]))
                self.send_response(fake.status)
                self.send_header("Content-Type", "application/json")
                self.end_headers()
                self.wfile.write(fake.body)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def answer(self, value: str | None) -> None:
        result = [] if value is None else [{"metric": {}, "value": [1.7e9, value]}]
        self.body = json.dumps({"status": "success", "data": {"resultType": "vector", "result": result}}).encode()


@pytest.fixture
def prometheus() -> Iterator[FakePrometheus]:
    fake = FakePrometheus()
    yield fake
    fake.server.shutdown()
    fake.server.server_close()


def test_an_instant_query_asks_the_api_and_reads_back_its_number(prometheus):
    prometheus.answer("12.5")
    assert PrometheusQueries(lambda: prometheus.url + "/").instant('sum(x{roving_service="web"})') == 12.5
    assert prometheus.asked == [("/api/v1/query", 'sum(x{roving_service="web"})')]
    prometheus.answer(None)
    assert PrometheusQueries(lambda: prometheus.url).instant("sum(x)") is None


def test_prometheus_refusing_a_query_or_answering_no_json_is_an_error_saying_why(prometheus):
    prometheus.status, prometheus.body = 400, b'{"status":"error","errorType":"bad_data","error":"parse error at 1"}'
    with pytest.raises(QueryError, match="refused the query: parse error at 1"):
        PrometheusQueries(lambda: prometheus.url).instant("sum(x)")
    prometheus.status, prometheus.body = 502, b"<html>bad gateway</html>"
    with pytest.raises(QueryError, match="HTTP 502"):
        PrometheusQueries(lambda: prometheus.url).instant("sum(x)")
    prometheus.status = 200
    with pytest.raises(QueryError, match="other than JSON"):
        PrometheusQueries(lambda: prometheus.url).instant("sum(x)")


def test_no_prometheus_or_one_that_is_down_is_an_error_naming_what_to_do():
    with pytest.raises(QueryError, match="ROVING_PROMETHEUS_URL"):
        PrometheusQueries(lambda: "").instant("sum(x)")
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    with pytest.raises(QueryError, match="did not answer"):
        PrometheusQueries(lambda: f"http://127.0.0.1:{port}", timeout=1).instant("sum(x)")


def test_the_loop_scales_on_the_query_it_rendered_with_the_pools_own_matchers(prometheus):
    wid, roving = uuid4(), Recorder()
    prometheus.answer("25")
    loop = AutoscalerLoop(roving, views(wid, Pool("web", 1, RULE, None)), EndpointTraffic(),
                          queries=PrometheusQueries(lambda: prometheus.url))
    assert loop.tick(NOW) == 1
    assert prometheus.asked[0][1] == f'sum(tenant:queue_depth{{roving_workflow="{wid}",roving_service="web"}})'
    assert roving.calls == [(wid, "web", 1, 3, "queue 25.00 per replica, target 10", NOW)]


def test_a_failing_query_never_scales_the_pool_and_is_logged_once_per_reason(prometheus, capsys):
    wid, roving = uuid4(), Recorder()
    prometheus.status, prometheus.body = 503, b"down"
    loop = AutoscalerLoop(roving, views(wid, Pool("web", 2, RULE, None)), EndpointTraffic(),
                          queries=PrometheusQueries(lambda: prometheus.url))
    assert loop.tick(NOW) == 0 and loop.tick(NOW) == 0
    assert roving.calls == []  # an idle endpoint and a dead Prometheus are not "scale to zero"
    logged = capsys.readouterr().out
    assert logged.count("autoscaler.query_failed") == 1 and "Prometheus answered HTTP 503" in logged
    prometheus.answer("0")
    assert loop.tick(NOW) == 1 and roving.calls[0][2:4] == (2, 0)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def scrape_config(target: str, workflows: dict[str, str]) -> str:
    """The shipped roving-replicas job, with static targets standing in for the discovery (one job a workflow)."""
    jobs = []
    for name, workflow in workflows.items():
        job = replicas_job({"url": "http://unused"}) | {"job_name": name}
        del job["http_sd_configs"]
        job["static_configs"] = [{"targets": [target], "labels": {"roving_workflow": workflow, "roving_service": "web"}}]
        jobs.append(job)
    return json.dumps({"global": {"scrape_interval": "1s"}, "scrape_configs": jobs})


@pytest.mark.skipif(shutil.which("prometheus") is None, reason="needs Debian's prometheus binary on PATH")
def test_a_real_prometheus_answers_the_rendered_query_with_only_the_pools_own_series(prometheus, tmp_path: Path):
    port, mine, theirs = free_port(), str(uuid4()), str(uuid4())
    # both workflows' exporters serve this (the fake answers it at any path): the other one claims to be `mine`,
    # and exports a series the cluster's alert rules read (it would place a monitoring hold on node n1)
    prometheus.body = (f'queue_depth{{roving_workflow="{mine}",roving_service="web"}} 7\n'
                       f'roving_node_disk_errors{{node="n1"}} 1\n').encode()
    (tmp_path / "prometheus.yml").write_text(scrape_config(prometheus.url.removeprefix("http://"),
                                                           {"mine": mine, "theirs": theirs}))
    process = subprocess.Popen(["prometheus", f"--config.file={tmp_path / 'prometheus.yml'}",
                                f"--storage.tsdb.path={tmp_path / 'data'}", f"--web.listen-address=127.0.0.1:{port}"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        queries, query = PrometheusQueries(lambda: f"http://127.0.0.1:{port}"), parse_query("sum(queue_depth)")
        value, deadline = None, time.monotonic() + 30
        while (value is None or queries.instant(query.render(theirs, "web")) is None) and time.monotonic() < deadline:
            try:
                value = queries.instant(query.render(mine, "web"))
            except QueryError:
                pass  # not listening yet
            time.sleep(0.5)
        assert value == 7.0  # the other workflow's claim on `mine` was relabelled to it: not 14
        assert queries.instant(query.render(theirs, "web")) == 7.0
        assert queries.instant(query.render(str(uuid4()), "web")) is None
        assert queries.instant("sum(roving_node_disk_errors)") is None  # no tenant series under the rules' names
        assert queries.instant("sum(tenant:roving_node_disk_errors)") == 2.0
    finally:
        process.terminate()
        process.wait(timeout=10)


def test_the_prometheus_setting_takes_an_http_address_and_refuses_one_with_credentials_without_echoing_them():
    from api.composition.settings import SettingsError, load_settings

    assert load_settings({"ROVING_PROMETHEUS_URL": " http://127.0.0.1:9090/ "}).prometheus_url == "http://127.0.0.1:9090"
    assert load_settings({}).prometheus_url == ""
    for bad in ("127.0.0.1:9090", "file:///etc/passwd", "http://admin:s3cret@prom:9090"):
        with pytest.raises(SettingsError, match="ROVING_PROMETHEUS_URL") as raised:
            load_settings({"ROVING_PROMETHEUS_URL": bad})
        assert "s3cret" not in str(raised.value)
