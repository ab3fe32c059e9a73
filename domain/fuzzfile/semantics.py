"""How Fuzzball runs a definition: stage statuses, `depends-on` conditions and retry decisions (pure rules)."""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass

from domain.fuzzfile.policy import UNRETRIABLE, RetryRule


class StageStatus(str, enum.Enum):
    PENDING = "PENDING"
    WAITING = "WAITING"
    READY = "READY"
    STARTED = "STARTED"
    RUNNING = "RUNNING"
    FINISHED = "FINISHED"
    FAILED = "FAILED"
    CANCELED = "CANCELED"

    @property
    def ended(self) -> bool:
        return self in ENDED

    @property
    def active(self) -> bool:
        return self in ACTIVE


ENDED = frozenset({StageStatus.FINISHED, StageStatus.FAILED, StageStatus.CANCELED})
ACTIVE = frozenset({StageStatus.READY, StageStatus.STARTED, StageStatus.RUNNING})


@dataclass(frozen=True)
class Verdict:
    """A dependency condition: holds now, may hold later (wait), or can never hold (with the reason)."""

    holds: bool = False
    never: bool = False
    reason: str = ""
    by_design: bool = False


WAIT = Verdict()
HOLDS = Verdict(holds=True)


def step_outcome(statuses: list[StageStatus]) -> str:
    """A step's outcome over its stages (a task array has many): FINISHED, FAILED, CANCELED, RUNNING or open."""
    counts: dict[StageStatus, int] = {}
    for status in statuses:
        counts[status] = counts.get(status, 0) + 1
    return outcome_of(counts, len(statuses))


def outcome_of(counts: Mapping[StageStatus, int], total: int) -> str:
    """`step_outcome` from how many of a step's `total` stages are in each status, in constant time."""
    finished, failed = counts.get(StageStatus.FINISHED, 0), counts.get(StageStatus.FAILED, 0)
    if total and finished == total:
        return "FINISHED"
    if finished + failed + counts.get(StageStatus.CANCELED, 0) == total:
        return "FAILED" if failed else "CANCELED"
    if total and counts.get(StageStatus.RUNNING, 0) == total:
        return "RUNNING"
    return "OPEN"


def active_of(counts: Mapping[StageStatus, int]) -> int:
    """How many stages hold a task-array slot (READY, STARTED or RUNNING)."""
    return sum(counts.get(status, 0) for status in ACTIVE)


def condition(step: str, wanted: str, outcome: str) -> Verdict:
    """Whether `depends-on: {name: step, status: wanted}` holds given the step's outcome."""
    if outcome == wanted:
        return HOLDS
    if outcome == "CANCELED":
        return Verdict(never=True, reason=f"{step} was canceled; a canceled dependency never satisfies {wanted}")
    if wanted == "FAILED" and outcome == "FINISHED":
        return Verdict(never=True, reason=f"{step} finished; post-mortem needs FAILED", by_design=True)
    if wanted == "FINISHED" and outcome == "FAILED":
        return Verdict(never=True, reason=f"{step} failed; needs FINISHED")
    if wanted == "RUNNING" and outcome in ("FINISHED", "FAILED"):
        return Verdict(never=True, reason=f"{step} ended before it was running")
    return WAIT


@dataclass(frozen=True)
class RetryDecision:
    retry: bool
    reason: str


def decide_exit(rule: RetryRule, code: int, retries_used: int) -> RetryDecision:
    """What a non-zero exit means: a new attempt while the shared budget lasts, else failure saying why."""
    if code in UNRETRIABLE and not rule.retries_exit(code):  # only an on-failure service lists them
        return RetryDecision(False, f"Failed: exit {code} (stopped by {UNRETRIABLE[code]}; never retried)")
    if not rule.retries_exit(code):
        if rule.retries_anything:
            return RetryDecision(False, f"Failed: exit {code} (exit {code} is not in policy.retry.on)")
        return RetryDecision(False, f"Failed: exit {code} (to retry it, set policy.retry: {{on: [{code}], attempts: N}})")
    return _within_budget(f"exit {code}", rule.attempts, retries_used)


# how an agent's reasons naming them begin (an image that cannot be pulled: its name and the registry's answer; a
# node that runs only its admin's work: why, api/agent/node.py)
NAMED_CAUSES = ("readiness probe failed", "liveness probe failed", "execute timeout", "cannot start: image ",
                "out of memory", "cannot start: single-user node")


def with_named_cause(decision: RetryDecision, told: str, code: int) -> RetryDecision:
    """A readiness or liveness probe or an execute timeout that stopped the stage is named instead of only its exit code
    (143 from SIGTERM says nothing of why the agent sent it)."""
    if not told.startswith(NAMED_CAUSES):
        return decision
    if not decision.retry and code in UNRETRIABLE:
        return RetryDecision(False, f"Failed: {told} (exit {code})")
    return RetryDecision(decision.retry, decision.reason.replace(f"exit {code}", f"{told} (exit {code})", 1))


def decide_node_loss(rule: RetryRule, retries_used: int, node_retries_used: int, cap: int) -> RetryDecision:
    """Node loss retries while both the shared budget and nodeHealth.maxEvictionRestarts last (the lower wins)."""
    if not rule.on_node:
        return RetryDecision(False, "Failed: lost its node (to retry, add node to policy.retry.on)")
    if node_retries_used >= cap:
        return RetryDecision(False, f"Failed: node loss; nodeHealth.maxEvictionRestarts ({cap}) reached")
    if rule.attempts is None:
        return RetryDecision(True, f"Retried after node loss (attempt {retries_used + 2} of {cap + 1})")
    return _within_budget("node loss", rule.attempts, retries_used)


def _within_budget(cause: str, attempts: int | None, used: int) -> RetryDecision:
    budget = attempts or 0
    if used < budget:
        return RetryDecision(True, f"Retried after {cause} (attempt {used + 2} of {budget + 1})")
    return RetryDecision(False, f"Failed: {cause}; retries exhausted ({budget} of {budget} used)")
