"""The `autoscaler` block of a service: bounds, metrics and cooldown checked naming the field; the pool it makes."""

from __future__ import annotations

from domain.fuzzfile import list_stages, parse_fuzzfile

SERVICE = """
version: v4
services:
  web:
    image: {uri: docker://alpine:3.20}
    script: sleep 600
    network:
      ports: [{name: http, port: 8000}]
      endpoints: [{name: web, port-name: http, persistent: true}]
"""


def problems(block: str) -> dict[str, str]:
    return {p.path: p.message for p in parse_fuzzfile(SERVICE + block).errors}


def test_an_autoscaled_service_is_a_pool_of_max_replicas_stages():
    parsed = parse_fuzzfile(SERVICE + "    autoscaler: {min-replicas: 1, max-replicas: 3, cooldown: 30s,"
                                      " metrics: [{name: in-flight-requests, target: 4}]}\n")
    assert parsed.errors == []
    assert [s.name for s in list_stages(parsed.definition)] == ["web[1]", "web[2]", "web[3]"]
    assert list_stages(parsed.definition)[2].env["FB_PORT_HTTP"] == "8002"


def test_min_above_max_and_min_below_zero_are_refused_naming_the_field():
    found = problems("    autoscaler: {min-replicas: 3, max-replicas: 2, metrics: [{name: in-flight-requests, target: 1}]}\n")
    assert "below min-replicas" in found["services.web.autoscaler.max-replicas"]
    found = problems("    autoscaler: {min-replicas: -1, max-replicas: 2, metrics: [{name: in-flight-requests, target: 1}]}\n")
    assert "services.web.autoscaler.min-replicas" in found
    assert problems("    autoscaler: {min-replicas: 0, max-replicas: 2, metrics: [{name: in-flight-requests, target: 1}]}\n"
                    ) == {}  # scale to zero: the seed allows it
    found = problems("    autoscaler: {min-replicas: 1, metrics: [{name: in-flight-requests, target: 1}]}\n")
    assert "services.web.autoscaler.max-replicas" in found


def test_an_unknown_metric_is_refused_naming_it_and_the_known_ones():
    found = problems("    autoscaler: {max-replicas: 2, metrics: [{name: gpu-utilization, target: 80}]}\n")
    assert found["services.web.autoscaler.metrics[0].name"] == (
        "unknown metric `gpu-utilization`; known: in-flight-requests, requests-per-second, or any name with a `query`")


def test_a_bad_cooldown_a_zero_target_or_no_metric_is_refused():
    found = problems("    autoscaler: {max-replicas: 2, cooldown: soon, metrics: [{name: in-flight-requests, target: 0}]}\n")
    assert {"services.web.autoscaler.cooldown", "services.web.autoscaler.metrics[0].target"} <= set(found)
    assert "services.web.autoscaler.metrics" in problems("    autoscaler: {max-replicas: 2}\n")


def test_replicas_beside_an_autoscaler_is_where_the_pool_starts_within_its_bounds():
    block = "    autoscaler: {min-replicas: 2, max-replicas: 3, metrics: [{name: requests-per-second, target: 5}]}\n"
    assert "services.web.replicas" in problems("    replicas: 5\n" + block)
    assert problems("    replicas: 3\n" + block) == {}


def test_an_autoscaler_needs_a_persistent_endpoint_to_measure():
    block = "    autoscaler: {max-replicas: 2, metrics: [{name: in-flight-requests, target: 1}]}\n"
    text = SERVICE.split("    network:")[0] + block
    assert "persistent" in {p.path: p.message for p in parse_fuzzfile(text).errors}["services.web.autoscaler"]


def test_a_query_metric_on_the_services_own_metrics_is_accepted():
    parsed = parse_fuzzfile(SERVICE + "    autoscaler: {min-replicas: 0, max-replicas: 4, metrics: [{name: queue-depth, "
                                      "query: 'sum(rate(http_requests_total[1m]))', target: 20}]}\n")
    assert parsed.errors == []


def test_a_query_outside_the_grammar_is_refused_naming_the_query_field():
    for query in ('sum(http_requests_total{roving_workflow="other"})', "sum(a) + sum(b)", "count(up)",
                  'sum(rate(x[1m]) or vector(1e9))', "sum(x offset 1h)", "sum(rate(x[1y]))", ""):
        found = problems("    autoscaler: {max-replicas: 2, metrics: [{name: load, query: '" + query + "', target: 1}]}\n")
        assert "is not one of the queries an autoscaler may run" in found["services.web.autoscaler.metrics[0].query"]


def test_a_query_metric_needs_a_name_of_its_own_unique_in_the_autoscaler():
    found = problems("    autoscaler: {max-replicas: 2, metrics: [{name: in-flight-requests, query: 'sum(x)', target: 1}]}\n")
    assert "a name of its own" in found["services.web.autoscaler.metrics[0].name"]
    found = problems("    autoscaler: {max-replicas: 2, metrics: [{name: load, query: 'sum(x)', target: 1},"
                     " {name: load, query: 'avg(y)', target: 1}]}\n")
    assert found["services.web.autoscaler.metrics[1].name"] == "metric `load` is named twice"
