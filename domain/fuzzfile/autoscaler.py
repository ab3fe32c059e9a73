"""The 4.1 `autoscaler` block of a service: its bounds, metrics and cooldown, checked naming the field.

A service with an autoscaler is a pool of `max-replicas` stages `web[1]` .. `web[max]`, of which the first
`replicas` (else `min-replicas`) run at first; the autoscaler (domain/autoscale.py) moves the pool's size between
the bounds. Its metrics are measured where requests reach the pool: the service's persistent endpoint.

`min-replicas: 0` lets an idle pool scale to zero: it starts with one replica (unless `replicas` says otherwise),
and the first request through its endpoint while none runs wakes one (api/composition/autoscaling.py).

A metric with a `query` is measured on the service's own metrics in Prometheus instead (domain.promql: a small
grammar, with Roving adding the labels that keep the query on the service's own replicas); its `name` is a label
of the tenant's choosing, unique within the autoscaler."""

from __future__ import annotations

import re

from domain.durations import DurationError, parse_duration
from domain.fuzzfile.blocks import Autoscaler, ScalingMetric
from domain.fuzzfile.decode import join
from domain.fuzzfile.limits import MAX_REPLICAS, bounded
from domain.fuzzfile.schema import Problem, Service
from domain.promql import QueryError, parse_query

METRICS = {  # name -> what it measures, per replica, through the service's persistent endpoint
    "in-flight-requests": "requests being answered at once",
    "requests-per-second": "requests answered per second",
}
_LABEL = re.compile(r"[a-z0-9][a-z0-9-]{0,62}")
DEFAULT_COOLDOWN = 60.0
MAX_COOLDOWN = 86_400.0


def pool_bounds(service: Service) -> tuple[int, int] | None:
    """(min, max) replicas of an autoscaled service; None without an autoscaler."""
    scaler = service.autoscaler
    if scaler is None:
        return None
    low = scaler.min_replicas if scaler.min_replicas is not None else 1
    return low, max(scaler.max_replicas or low, low, 1)


def initial_size(service: Service) -> int:
    """How many replicas an autoscaled pool runs before its first scale step."""
    bounds = pool_bounds(service)
    if bounds is None:
        return service.replicas or 1
    return service.replicas if service.replicas is not None else max(bounds[0], 1)


def cooldown_seconds(scaler: Autoscaler) -> float:
    return parse_duration(scaler.cooldown) if scaler.cooldown is not None else DEFAULT_COOLDOWN


def check_autoscaler(service: Service, path: str, has_endpoint: bool) -> list[Problem]:
    scaler = service.autoscaler
    if scaler is None:
        return []
    where = join(path, "autoscaler")
    errors: list[Problem] = []
    bounded(errors, join(where, "min-replicas"), scaler.min_replicas, 0, MAX_REPLICAS, "min-replicas")
    if scaler.max_replicas is None:
        errors.append(Problem(join(where, "max-replicas"), "set the most replicas the pool may grow to"))
    bounded(errors, join(where, "max-replicas"), scaler.max_replicas, 1, MAX_REPLICAS, "max-replicas")
    low, high = scaler.min_replicas if scaler.min_replicas is not None else 1, scaler.max_replicas
    if high is not None and low > high:
        errors.append(Problem(join(where, "max-replicas"), f"max-replicas ({high}) is below min-replicas ({low})"))
    if service.replicas is not None and high is not None and not low <= service.replicas <= high:
        errors.append(Problem(join(path, "replicas"), f"replicas ({service.replicas}) is where the pool starts: "
                                                      f"between min-replicas ({low}) and max-replicas ({high})"))
    errors += _check_metrics(scaler, where)
    errors += _check_cooldown(scaler, where)
    if not has_endpoint:
        errors.append(Problem(where, "the autoscaler measures requests at the service's endpoint: declare a "
                                     "persistent one in network.endpoints"))
    return errors


def _check_metrics(scaler: Autoscaler, where: str) -> list[Problem]:
    if not scaler.metrics:
        return [Problem(join(where, "metrics"), f"name at least one metric: {', '.join(METRICS)}")]
    errors, seen = [], set()
    for index, metric in enumerate(scaler.metrics):
        at = f"{join(where, 'metrics')}[{index}]"
        if metric.query is not None:
            errors += _check_query(metric, at)
        elif metric.name not in METRICS:
            errors.append(Problem(join(at, "name"), f"unknown metric `{metric.name}`; known: {', '.join(METRICS)}, "
                                                    "or any name with a `query`"))
        if metric.name in seen:
            errors.append(Problem(join(at, "name"), f"metric `{metric.name}` is named twice"))
        seen.add(metric.name)
        if not metric.target > 0:
            errors.append(Problem(join(at, "target"), "a metric's target per replica is more than 0"))
    return errors


def _check_query(metric: ScalingMetric, at: str) -> list[Problem]:
    errors = []
    if metric.name in METRICS or not _LABEL.fullmatch(metric.name):
        errors.append(Problem(join(at, "name"), "a query's metric has a name of its own (lowercase letters, digits "
                                                f"and -, up to 63), not one of {', '.join(METRICS)}"))
    try:
        parse_query(metric.query or "")
    except QueryError as error:
        errors.append(Problem(join(at, "query"), str(error)))
    return errors


def _check_cooldown(scaler: Autoscaler, where: str) -> list[Problem]:
    if scaler.cooldown is None:
        return []
    try:
        seconds = parse_duration(scaler.cooldown)
    except DurationError as error:
        return [Problem(join(where, "cooldown"), str(error))]
    if not 0 <= seconds <= MAX_COOLDOWN:
        return [Problem(join(where, "cooldown"), f"a cooldown is 0 to {MAX_COOLDOWN:,.0f}s")]
    return []
