"""The dashboard's history: queue depth (waiting, running) and CPU utilisation over the last hour, as small SVG charts.

From Prometheus when `roving up --monitoring` runs it (its range queries over what it scraped), else from the log:
every allocation's requested, started and ended times (the queue view, a projection of the log) give how many
waited and ran at each moment, and the CPU their requests held. Either way a tenant's chart counts only the work
the API lets them see."""

from __future__ import annotations

import json
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterable
from datetime import datetime, timedelta
from typing import Any

from api.http.ui import render

SPAN, POINTS = timedelta(hours=1), 60


class Series:
    def __init__(self, label: str, values: list[float], unit: str = "") -> None:
        self.label, self.values, self.unit = label, values, unit


def moments(now: datetime) -> list[datetime]:
    step = SPAN / POINTS
    return [now - SPAN + step * (i + 1) for i in range(POINTS)]


def from_log(allocations: Iterable[Any], total_cpu: int, now: datetime) -> tuple[Series, Series, Series]:
    """(waiting, running, cpu %) at each of the last hour's minutes, from each allocation's own times."""
    spans = [(a.requested_at, a.started_at, a.ended_at, cpu_of(a)) for a in allocations]
    waiting, running, cpu = [], [], []
    for t in moments(now):
        live = [(s, c) for q, s, e, c in spans if q <= t and (e is None or e > t)]
        started = [c for s, c in live if s is not None and s <= t]
        waiting.append(float(len(live) - len(started)))
        running.append(float(len(started)))
        cpu.append(100.0 * sum(started) / total_cpu if total_cpu else 0.0)
    return Series("waiting", waiting), Series("running", running), Series("CPU allocated", cpu, "%")


def cpu_of(allocation: Any) -> int:
    return int(allocation.resources.cpu_cores or 1)


def from_prometheus(url: str, now: datetime, ask: Callable[[str], Any] | None = None) -> tuple[Series, Series, Series]:
    """The same three series from Prometheus' range queries over Roving's own metrics (cluster-wide)."""
    ask = ask or fetch
    start, end = (now - SPAN).timestamp(), now.timestamp()
    step = SPAN.total_seconds() / POINTS

    def series(query: str) -> list[float]:
        answer = ask(f"{url}/api/v1/query_range?" + urllib.parse.urlencode(
            {"query": query, "start": start, "end": end, "step": step}))
        found = answer.get("data", {}).get("result", [])
        values = {round(float(t)): float(v) for t, v in found[0]["values"]} if found else {}
        return [values.get(round(start + step * (i + 1)), 0.0) for i in range(POINTS)]
    waiting = series('sum(roving_queue_allocations{state=~"PENDING|READY"})')
    running = series('sum(roving_queue_allocations{state="RUNNING"})')
    cpu = series("100 * max(roving_cpu_cores_allocated) / max(roving_cpu_cores)")
    return Series("waiting", waiting), Series("running", running), Series("CPU allocated", cpu, "%")


def fetch(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=3) as answer:  # noqa: S310 - our own loopback Prometheus
        return json.loads(answer.read())


def chart(id: str, title: str, series: list[Series], colours: tuple[str, ...] = ("#1f5fbf", "#c2410c")) -> render.Html:
    """An SVG line chart (no script, no library): the last hour left to right, its highest value labelled."""
    width, height = 600, 120
    top = max([max(s.values, default=0) for s in series] + [1])
    lines = []
    for s, colour in zip(series, colours, strict=False):
        step = width / max(1, len(s.values) - 1)
        points = " ".join(f"{i * step:.0f},{height - 14 - v / top * (height - 28):.0f}" for i, v in enumerate(s.values))
        lines.append({"colour": colour, "label": s.label, "points": points, "unit": s.unit,
                      "last": f"{s.values[-1] if s.values else 0:g}"})
    unit = series[0].unit if series else ""
    return render.Html(render.part("dashboard_parts", "chart")(id, title, width, height, f"{top:g}", unit, lines))
