"""What reaches each endpoint through the proxy: requests in flight (averaged over time) and requests per second.

The proxy calls `begin`/`end` around each request on the event loop; the autoscaler's thread calls `sample`, which
returns each endpoint's figures since the previous sample and starts a new window."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass
class _Meter:
    in_flight: int = 0
    since: float = 0.0  # when in_flight last changed
    busy: float = 0.0  # in-flight x seconds in this window
    requests: int = 0  # requests begun in this window
    window: float = 0.0  # when this window began


@dataclass(frozen=True)
class Sample:
    in_flight: float  # the time-weighted mean of requests in flight over the window
    per_second: float  # requests begun per second over the window

    def as_metrics(self) -> dict[str, float]:
        """The figures by the autoscaler's metric names (totals over the endpoint's replicas)."""
        return {"in-flight-requests": self.in_flight, "requests-per-second": self.per_second}


@dataclass
class EndpointTraffic:
    clock: Callable[[], float] = time.monotonic
    _meters: dict[str, _Meter] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def begin(self, endpoint: str) -> None:
        with self._lock:
            meter = self._meter(endpoint)
            self._settle(meter)
            meter.in_flight += 1
            meter.requests += 1

    def end(self, endpoint: str) -> None:
        with self._lock:
            meter = self._meter(endpoint)
            self._settle(meter)
            meter.in_flight = max(meter.in_flight - 1, 0)

    def sample(self, endpoint: str) -> Sample | None:
        """The window since the last sample of `endpoint`; None when nothing was measured yet (no request ever)."""
        with self._lock:
            meter = self._meters.get(endpoint)
            if meter is None:
                return None
            self._settle(meter)
            now = self.clock()
            span = max(now - meter.window, 1e-6)
            found = Sample(meter.busy / span, meter.requests / span)
            meter.busy, meter.requests, meter.window = 0.0, 0, now
            return found

    def _meter(self, endpoint: str) -> _Meter:
        meter = self._meters.get(endpoint)
        if meter is None:
            now = self.clock()
            meter = self._meters[endpoint] = _Meter(since=now, window=now)
        return meter

    def _settle(self, meter: _Meter) -> None:
        now = self.clock()
        meter.busy += meter.in_flight * (now - meter.since)
        meter.since = now
