"""How an agent's reports reach the control plane: through the durable outbox, retried until answered.

The answers are read as the protocol defines them: 200 is recorded (a repeat is recorded too: reports are
idempotent), 409 `stale_epoch` is fenced (the control plane moved past this placement: the copy here must stop),
and everything else that can pass (no answer, 5xx with Retry-After, 429, a token problem an admin may fix) is
tried again with backoff and jitter. A report is never dropped for a transient failure; one the control plane
can never take (400: a malformed report, 404: the allocation or node is gone) leaves the outbox with an error log.
"""

from __future__ import annotations

import asyncio
import enum
import time
from collections.abc import Awaitable, Callable
from typing import Any

import httpx
import structlog

from adapters.outbox import Entry, Outbox

log = structlog.get_logger("roving.agent")
Send = Callable[..., Awaitable[httpx.Response | None]]


class Outcome(enum.Enum):
    RECORDED = "recorded"
    FENCED = "fenced"
    PENDING = "pending"  # not answered yet: it stays in the outbox and is tried again


def outcome_of(response: httpx.Response | None) -> Outcome | None:
    """The protocol's reading of an answer; None when the report can never be taken (it is dropped, logged)."""
    if response is None:
        return Outcome.PENDING
    status = response.status_code
    if status == 200:
        return Outcome.RECORDED
    if status == 409:
        return Outcome.FENCED
    if status in (400, 404, 422):
        return None
    return Outcome.PENDING


class Reporter:
    """Puts reports in the outbox and sends what is due, the reports of one allocation in order."""

    def __init__(self, outbox: Outbox, send: Send, on_fenced: Callable[[Entry], Any]) -> None:
        self.outbox, self.send, self.on_fenced = outbox, send, on_fenced

    def waiting(self, allocation_id: str, epoch: int, event: str) -> bool:
        return (allocation_id, epoch, event) in self.outbox.entries

    async def report(self, body: dict[str, Any]) -> Outcome:
        entry = self.outbox.put(body)
        outcomes = await self.flush()
        return outcomes.get(entry.key, Outcome.PENDING)

    async def flush(self) -> dict[tuple, Outcome]:
        """Send every due report once; an allocation whose earlier report is still waiting sends nothing later."""
        outcomes: dict[tuple, Outcome] = {}
        held: set[str] = set()
        for entry in self.outbox.pending():
            if entry.allocation in held or time.monotonic() < entry.not_before:
                held.add(entry.allocation)
                continue
            response = await self.send("POST", "/v4/agent/reports", json=entry.body)
            outcome = outcomes[entry.key] = self._settle(entry, response)
            if outcome is Outcome.PENDING:
                held.add(entry.allocation)
        return outcomes

    async def drain(self, deadline: float, stop: asyncio.Event) -> None:
        """Before (re)registering: deliver what a previous run left, while its placements still hold."""
        while len(self.outbox) and time.monotonic() < deadline and not stop.is_set():
            await self.flush()
            if len(self.outbox):
                try:
                    await asyncio.wait_for(stop.wait(), 0.2)
                except TimeoutError:
                    pass

    def _settle(self, entry: Entry, response: httpx.Response | None) -> Outcome:
        outcome = outcome_of(response)
        fields = {"allocation_id": entry.allocation, "epoch": entry.key[1], "report": entry.key[2]}
        if outcome is None:
            log.error("agent.report_refused", status=response.status_code, body=response.text[:300], **fields)
            self.outbox.done(entry)
            return Outcome.FENCED
        if outcome is Outcome.PENDING:
            why = f"HTTP {response.status_code}" if response is not None else "API unreachable"
            entry.back_off(time.monotonic(), why)
            _honour_retry_after(entry, response)
            log.info("agent.report_deferred", attempts=entry.attempts, why=why, **fields)
            return outcome
        self.outbox.done(entry)
        if outcome is Outcome.FENCED:
            log.warning("agent.fenced", reason=response.text[:200], **fields)
            self.on_fenced(entry)
        return outcome


def _honour_retry_after(entry: Entry, response: httpx.Response | None) -> None:
    raw = response.headers.get("retry-after", "") if response is not None else ""
    if raw.isdigit():
        entry.not_before = max(entry.not_before, time.monotonic() + min(int(raw), 30))
