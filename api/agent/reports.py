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
import msgspec
import structlog

from adapters.outbox import Entry, Outbox, key_of
from api.agent.messages import as_json
from domain.agent_protocol import BatchResult, BatchResults, Report, Reports

log = structlog.get_logger("roving.agent")
Send = Callable[..., Awaitable[httpx.Response | None]]
ADVISORY = frozenset({"started", "ran_on_host"})  # the control plane records nothing for these (only fences)
# reports that wait LINGER for company: the advisory ones, and a note (a memlock limit not raised), which then
# shares the exit's request and commit instead of costing a round trip and a commit of its own
LINGERING = ADVISORY | {"note"}
LINGER = 0.2  # seconds advisory reports wait for an exit or another report to share their request
BATCH = 200  # reports a request


class Outcome(enum.Enum):
    RECORDED = "recorded"
    FENCED = "fenced"
    PENDING = "pending"  # not answered yet: it stays in the outbox and is tried again


def outcome_of(response: httpx.Response | _Answer | None) -> Outcome | None:
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
    """Puts reports in the outbox and sends what is due, the reports of one allocation in order.

    Reports made in one round of the agent's loop (`queue`) go to disk together (one fsync) and to the control
    plane together (one request, `POST /v4/agent/reports:batch`). A round holding only advisory reports (`started`,
    `ran_on_host`: nothing is recorded for them) waits up to LINGER for company, so a short job's start and end
    travel as one request. A control plane without the batch route is sent one report a request."""

    def __init__(self, outbox: Outbox, send: Send, on_fenced: Callable[[Entry], Any],
                 over_bus: Callable[[Reports], Awaitable[BatchResults | None]] | None = None) -> None:
        self.outbox, self.send, self.on_fenced = outbox, send, on_fenced
        self.over_bus = over_bus  # a batch's results over NATS (api/agent/bus.py); None: send it over HTTP
        self.queued: list[tuple[Report, Callable[[], Any] | None]] = []
        self.batching = True
        self._advisory_since: float | None = None

    def waiting(self, allocation_id: str, epoch: int, event: str) -> bool:
        return (allocation_id, epoch, event) in self.outbox.entries or any(
            key_of(body) == (allocation_id, epoch, event) for body, _ in self.queued)

    def queue(self, body: Report, then: Callable[[], Any] | None = None) -> None:
        """A report of this round: on disk and sent at the next `flush`; `then` runs once it is on disk."""
        self.queued.append((body, then))

    async def report(self, body: Report) -> Outcome:
        """One report now: on disk, sent, and its outcome."""
        self.queue(body)
        outcomes = await self.flush(force=True)
        return outcomes.get(key_of(body), Outcome.PENDING)

    async def flush(self, force: bool = False) -> dict[tuple, Outcome]:
        """What was queued goes to disk; every due report is sent once, in one request; an allocation whose earlier
        report is still waiting sends nothing later."""
        self._persist()
        due = self._due()
        if not due or not (force or self._urgent(due)):
            return {}
        self._advisory_since = None
        if self.batching:
            outcomes = await self._send_batches(due)
            if outcomes is not None:
                return outcomes
        return await self._send_each(due)

    async def drain(self, deadline: float, stop: asyncio.Event) -> None:
        """Before (re)registering: deliver what a previous run left, while its placements still hold."""
        while len(self.outbox) and time.monotonic() < deadline and not stop.is_set():
            await self.flush(force=True)
            if len(self.outbox):
                try:
                    await asyncio.wait_for(stop.wait(), 0.2)
                except TimeoutError:
                    pass

    def _persist(self) -> None:
        if not self.queued:
            return
        queued, self.queued = self.queued, []
        self.outbox.put_many([body for body, _ in queued])
        for _, then in queued:
            if then is not None:
                then()

    def _due(self) -> list[Entry]:
        due: list[Entry] = []
        held: set[str] = set()
        now = time.monotonic()
        for entry in self.outbox.pending():
            if entry.allocation in held or now < entry.not_before:
                held.add(entry.allocation)
                continue
            due.append(entry)
        return due

    def _urgent(self, due: list[Entry]) -> bool:
        """Anything but advisory reports goes at once; advisory ones alone wait LINGER for company."""
        if any(entry.key[2] not in LINGERING for entry in due):
            return True
        now = time.monotonic()
        self._advisory_since = self._advisory_since or now
        return now - self._advisory_since >= LINGER

    async def _send_batches(self, due: list[Entry]) -> dict[tuple, Outcome] | None:
        """None when the control plane has no batch route (an older one): the caller sends each on its own."""
        outcomes: dict[tuple, Outcome] = {}
        for start in range(0, len(due), BATCH):
            chunk = due[start:start + BATCH]
            batch = Reports(node_id=chunk[0].body.node_id, reports=[e.body for e in chunk])
            heard = await self.over_bus(batch) if self.over_bus is not None else None
            if heard is not None and len(heard.results) == len(chunk):
                for entry, result in zip(chunk, heard.results, strict=True):
                    outcomes[entry.key] = self._settle(entry, _Answer(result))
                continue
            response = await self.send("POST", "/v4/agent/reports:batch", **as_json(batch))
            if response is not None and response.status_code in (404, 405) and not outcomes:
                self.batching = False
                return None
            if response is not None and response.status_code in (400, 422) and self._drop_notes(chunk):
                return {**outcomes, **(await self._send_batches([e for e in chunk if e.key[2] != "note"]) or {})}
            if response is not None and response.status_code == 413 and len(chunk) > 1:  # too large a body for it
                half = len(chunk) // 2  # (long reasons, a proxy's limit): halves, as sent the same it would stay 413
                for part in (chunk[:half], chunk[half:]):
                    outcomes.update(await self._send_batches(part) or {})
                continue
            if response is None or response.status_code != 200:
                for entry in chunk:
                    outcomes[entry.key] = self._settle(entry, response)
                continue
            results = _results(response)
            for entry, result in zip(chunk, results, strict=False):
                outcomes[entry.key] = self._settle(entry, _Answer(result))
        return outcomes

    def _drop_notes(self, chunk: list[Entry]) -> bool:
        """A control plane older than `note` refuses a whole batch holding one (its event does not decode): the
        notes leave the outbox, logged, and the rest is sent again without them. False: there was none."""
        notes = [entry for entry in chunk if entry.key[2] == "note"]
        for entry in notes:
            log.warning("agent.note_refused", allocation_id=entry.allocation, reason=entry.body.reason[:200])
            self.outbox.done(entry)
        return bool(notes)

    async def _send_each(self, due: list[Entry]) -> dict[tuple, Outcome]:
        outcomes: dict[tuple, Outcome] = {}
        held: set[str] = set()
        for entry in due:
            if entry.allocation in held:
                continue
            response = await self.send("POST", "/v4/agent/reports", **as_json(entry.body))
            outcome = outcomes[entry.key] = self._settle(entry, response)
            if outcome is Outcome.PENDING:
                held.add(entry.allocation)
        return outcomes

    def _settle(self, entry: Entry, response: httpx.Response | _Answer | None) -> Outcome:
        outcome = outcome_of(response)
        fields = {"allocation_id": entry.allocation, "epoch": entry.key[1], "report": entry.key[2]}
        if response is None or outcome is Outcome.PENDING:  # (no answer is always PENDING)
            why = f"HTTP {response.status_code}" if response is not None else "API unreachable"
            entry.back_off(time.monotonic(), why)
            _honour_retry_after(entry, response)
            log.info("agent.report_deferred", attempts=entry.attempts, why=why, **fields)
            return Outcome.PENDING
        if outcome is None:
            log.error("agent.report_refused", status=response.status_code, body=response.text[:300], **fields)
            self.outbox.done(entry)
            return Outcome.FENCED
        self.outbox.done(entry)
        if outcome is Outcome.FENCED:
            log.warning("agent.fenced", reason=response.text[:200], **fields)
            self.on_fenced(entry)
        return outcome


def _results(response: httpx.Response) -> list[BatchResult]:
    """A batch's results; an answer that is none (no report in it is taken as answered: each is tried again)."""
    try:
        return msgspec.json.decode(response.content, type=BatchResults).results
    except msgspec.DecodeError:
        log.warning("agent.batch_answer_unreadable", body=response.text[:300])
        return []


class _Answer:
    """One report's result inside a batch answer, read as a response of its own."""

    def __init__(self, result: BatchResult) -> None:
        self.status_code = result.status
        self.text = result.error
        self.headers: dict[str, str] = {}


def _honour_retry_after(entry: Entry, response: httpx.Response | _Answer | None) -> None:
    raw = response.headers.get("retry-after", "") if response is not None else ""
    if raw.isdigit():
        entry.not_before = max(entry.not_before, time.monotonic() + min(int(raw), 30))
