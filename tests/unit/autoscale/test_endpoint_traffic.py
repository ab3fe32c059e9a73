"""The proxy's traffic meter: requests in flight averaged over time, and requests per second, per sample window."""

from __future__ import annotations

from adapters.traffic import EndpointTraffic


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_two_requests_held_for_half_the_window_average_one_in_flight():
    clock = Clock()
    traffic = EndpointTraffic(clock=clock)
    traffic.begin("llm")
    traffic.begin("llm")
    clock.now += 1.0
    traffic.end("llm")
    traffic.end("llm")
    clock.now += 1.0
    sample = traffic.sample("llm")
    assert (sample.in_flight, sample.per_second) == (1.0, 1.0)
    assert sample.as_metrics() == {"in-flight-requests": 1.0, "requests-per-second": 1.0}


def test_each_sample_starts_a_new_window_and_a_request_still_open_counts_in_both():
    clock = Clock()
    traffic = EndpointTraffic(clock=clock)
    traffic.begin("llm")
    clock.now += 2.0
    assert traffic.sample("llm").in_flight == 1.0
    clock.now += 2.0
    traffic.end("llm")
    clock.now += 2.0
    second = traffic.sample("llm")
    assert (second.in_flight, second.per_second) == (0.5, 0.0)


def test_an_endpoint_nobody_called_has_no_sample():
    assert EndpointTraffic().sample("quiet") is None
