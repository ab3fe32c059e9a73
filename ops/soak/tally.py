"""What a run counts: faults injected, violations with their evidence, and every API call's outcome."""

from __future__ import annotations

import sys
import threading
from collections import Counter
from typing import Any

import httpx

EVIDENCE_KEPT = 200  # details kept per run; counts are always exact


class Tally:
    """Thread-safe counters shared by the workload, the fault injector and the checker."""

    def __init__(self, seed: int) -> None:
        self.seed = seed
        self.lock = threading.Lock()
        self.faults: Counter[str] = Counter()
        self.violations: Counter[str] = Counter()
        self.details: list[dict[str, Any]] = []
        self.calls: Counter[str] = Counter()
        self.suspects: set[str] = set()  # workflow ids whose history is printed at the end
        self.outages = 0  # faults in progress that take the log or the API down on purpose

    def outage(self, delta: int) -> None:
        with self.lock:
            self.outages += delta

    def in_outage(self) -> bool:
        return self.outages > 0

    def fault(self, kind: str) -> None:
        with self.lock:
            self.faults[kind] += 1

    def violation(self, invariant: str, message: str, workflow: str | None = None, times: int = 1,
                  **facts: Any) -> None:
        with self.lock:
            self.violations[invariant] += times
            if workflow:
                self.suspects.add(workflow)
            if len(self.details) < EVIDENCE_KEPT:
                self.details.append({"invariant": invariant, "workflow": workflow, "message": message, **facts})
        print(f"soak seed={self.seed} VIOLATION {invariant}: {message}" + (f" (workflow {workflow})" if workflow else ""),
              file=sys.stderr, flush=True)

    def call(self, outcome: str) -> None:
        with self.lock:
            self.calls[outcome] += 1


class Api:
    """One HTTP client (one per thread); every answer is counted, every 5xx is a violation."""

    def __init__(self, url: str, token: str, tally: Tally, timeout: float = 20.0) -> None:
        assert url.startswith("http://127.0.0.1:"), "the soak only ever talks to this machine"
        self.client = httpx.Client(base_url=url, headers={"Authorization": f"Bearer {token}"}, timeout=timeout)
        self.tally = tally

    def call(self, method: str, path: str, **kwargs: Any) -> httpx.Response | None:
        """The answer, or None when the API could not be reached (expected while the harness restarts it)."""
        try:
            answer = self.client.request(method, path, **kwargs)
        except httpx.HTTPError as error:
            self.tally.call("unreachable")
            self.last_error = repr(error)
            return None
        if answer.status_code == 503 and "retry-after" in answer.headers and self.tally.in_outage():
            # The log is down because the harness killed it: "try again later" is the honest answer then.
            self.tally.call("503_during_outage")
            return answer
        self.tally.call(f"{answer.status_code // 100}xx")
        if answer.status_code >= 500:
            self.tally.violation("http_5xx", f"{method} {path} -> {answer.status_code}: {answer.text[:300]}",
                                 status=answer.status_code)
        return answer

    def json(self, method: str, path: str, **kwargs: Any) -> Any:
        """The decoded body of a 2xx answer, else None."""
        answer = self.call(method, path, **kwargs)
        return answer.json() if answer is not None and answer.status_code < 300 else None

    def close(self) -> None:
        self.client.close()
