"""A tenant's autoscaler query on its service's own metrics: the small PromQL it may write, and the answer read back.

A tenant names one metric (as its replicas export it) inside one of a few shapes (`sum(M)`, `avg(M)`, `max(M)`, and the same over
`rate(M[d])`); nothing else parses, so no label matcher, operator, function or second metric can be written. Roving
renders the query itself with the workflow's and the service's label matchers on the metric, which is how a tenant's
query only ever reads the series scraped from its own replicas: there is no place in the grammar to name or undo them.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

AGGREGATIONS = ("sum", "avg", "max")
WORKFLOW_LABEL, SERVICE_LABEL = "roving_workflow", "roving_service"  # set by Roving's scrape of the replicas
# Roving's scrape renames every series a replica exports with this prefix, so no tenant's series is ever one the
# cluster's alert rules or dashboards read (a fake roving_node_disk_errors{node="n1"} would place a hold on n1)
TENANT_PREFIX = "tenant:"
MAX_QUERY = 200
_METRIC = r"[a-zA-Z_:][a-zA-Z0-9_:]{0,127}"
_RANGE = r"[1-9][0-9]{0,3}[smh]"
_SHAPE = re.compile(rf"\s*(?P<agg>{'|'.join(AGGREGATIONS)})\s*\(\s*(?:(?P<metric>{_METRIC})|rate\s*\(\s*"
                    rf"(?P<rated>{_METRIC})\s*\[\s*(?P<range>{_RANGE})\s*\]\s*\))\s*\)\s*")
SHAPES = "sum(METRIC), avg(METRIC), max(METRIC), or sum|avg|max(rate(METRIC[1m]))"


class QueryError(ValueError):
    """A query outside the grammar, or a Prometheus answer the autoscaler cannot use (the message says why)."""


@dataclass(frozen=True)
class SafeQuery:
    """A parsed tenant query: an aggregation of one metric, or of its per-second rate over a range."""

    aggregation: str
    metric: str
    rate_range: str | None = None

    def render(self, workflow: str, service: str) -> str:
        """The PromQL Roving sends: the tenant's shape, with its own workflow's and service's matchers."""
        selector = f'{TENANT_PREFIX}{self.metric}{{{WORKFLOW_LABEL}="{_quoted(workflow)}",{SERVICE_LABEL}="{_quoted(service)}"}}'
        inner = f"rate({selector}[{self.rate_range}])" if self.rate_range else selector
        return f"{self.aggregation}({inner})"

    def total(self, value: float, size: int) -> float:
        """The pool's total the rule compares with target per replica: an average counts once per replica."""
        return value * size if self.aggregation == "avg" else value


def parse_query(text: str) -> SafeQuery:
    if len(text) > MAX_QUERY:
        raise QueryError(f"a query is at most {MAX_QUERY} characters")
    found = _SHAPE.fullmatch(text)
    if found is None:
        raise QueryError(f"`{text}` is not one of the queries an autoscaler may run: {SHAPES}, where METRIC is a "
                         "metric name of the service's own (Roving adds the labels that select its replicas)")
    metric = found["metric"] or found["rated"]
    return SafeQuery(found["agg"], metric, found["range"])


def read_answer(answer: Any) -> float | None:
    """The one number of an instant query's answer (Prometheus' HTTP API shape). None: no series matched (no
    replica scraped yet), which is no evidence of idleness. Any other shape, or an error answer, is a QueryError."""
    if not isinstance(answer, dict):
        raise QueryError("Prometheus answered something other than a JSON object")
    if answer.get("status") != "success":
        raise QueryError(f"Prometheus refused the query: {str(answer.get('error') or answer.get('status'))[:200]}")
    data = answer.get("data")
    if not isinstance(data, dict) or data.get("resultType") != "vector" or not isinstance(data.get("result"), list):
        raise QueryError("Prometheus' answer is not an instant vector")
    result = data["result"]
    if not result:
        return None
    if len(result) != 1:
        raise QueryError(f"the query gave {len(result)} series, not one number")
    return _number(result[0])


def _number(sample: Any) -> float:
    try:
        value = float(sample["value"][1])
    except (KeyError, IndexError, TypeError, ValueError):
        raise QueryError("Prometheus' sample has no [time, value] pair") from None
    if not math.isfinite(value) or value < 0:
        raise QueryError(f"the query gave {value}, not a finite number of 0 or more")
    return value


def _quoted(value: str) -> str:
    """A label value in double quotes: escaped, so no value closes the matcher (ids and names never need it)."""
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
