"""Instant queries to Prometheus' HTTP API for the autoscaler: one number per query, or a QueryError saying why not."""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable

from domain.promql import QueryError, read_answer

TIMEOUT = 3.0
MAX_ANSWER = 1 << 20  # one aggregated number; a larger answer is not one


class PrometheusQueries:
    """`address()` is read at each query: `roving up --monitoring` may start Prometheus after the autoscaler."""

    def __init__(self, address: Callable[[], str], timeout: float = TIMEOUT) -> None:
        self.address, self.timeout = address, timeout

    def instant(self, promql: str) -> float | None:
        base = self.address().rstrip("/")
        if not base:
            raise QueryError("no Prometheus to ask: run `roving up --monitoring` or set ROVING_PROMETHEUS_URL")
        url = f"{base}/api/v1/query?" + urllib.parse.urlencode({"query": promql})
        try:
            with urllib.request.urlopen(url, timeout=self.timeout) as answer:  # noqa: S310 - the admin's Prometheus
                body = answer.read(MAX_ANSWER + 1)
        except urllib.error.HTTPError as error:
            body = error.read(MAX_ANSWER + 1)  # Prometheus says why in a JSON body with 400 and 422
            if not body.startswith(b"{"):
                raise QueryError(f"Prometheus answered HTTP {error.code}") from None
        except (OSError, ValueError) as error:
            raise QueryError(f"Prometheus at {base} did not answer: {error}") from None
        if len(body) > MAX_ANSWER:
            raise QueryError("Prometheus' answer is over 1 MiB")
        try:
            return read_answer(json.loads(body))
        except ValueError as error:
            if isinstance(error, QueryError):
                raise
            raise QueryError("Prometheus answered something other than JSON") from None
