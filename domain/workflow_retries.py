"""What a stage's failed attempt decides: a new attempt or the stage's failure, and the words that failure says.

The retry budget's rules are the Fuzzfile's (domain/fuzzfile/semantics.py: decide_exit, decide_node_loss); here they
are applied to a stage of a workflow: the agent's own reason replaces an exit code's words where it knows better, a
node's loss is named by its cause, and a failure that spent a budget is recorded as such (RetriesExhausted).
"""

from __future__ import annotations

from domain.fuzzfile import Stage
from domain.fuzzfile.hooks import PRE_HOOK_REASON
from domain.fuzzfile.images import BUILD
from domain.fuzzfile.semantics import RetryDecision, decide_exit, decide_node_loss, with_named_cause
from domain.fuzzfile.transfers import TRANSFER_KINDS
from domain.multinode import RANK_REASON
from domain.workflow_stages import StageState

DEFAULT_MAX_EVICTION_RESTARTS = 3


def exit_decision(template: Stage, exit_code: int, retries_used: int, told: str) -> RetryDecision:
    """Retry or fail a stage that exited `exit_code`. `told`, the agent's reason, replaces the exit code's words
    when the stage fails for a reason the agent knows better: a failed transfer or build, a failing pre hook,
    or the rank of a multinode job whose failure stopped the others."""
    decision = with_named_cause(decide_exit(template.retry, exit_code, retries_used), told, exit_code)
    if not told or decision.retry:
        return decision
    if template.kind in (*TRANSFER_KINDS, BUILD):
        return RetryDecision(False, f"Failed: {told}")
    if told.startswith(PRE_HOOK_REASON):
        return RetryDecision(False, f"Failed: {told} (exit {exit_code})")
    if told.startswith(RANK_REASON):
        return RetryDecision(False, f"Failed: {told}")
    return decision


def node_loss_decision(state: StageState, max_eviction_restarts: int, cause: str) -> RetryDecision:
    """Retry or fail a stage whose node went; `cause` (an eviction's hold reason, a removal) is named instead of
    'lost its node' when it fails."""
    template = state.template
    decision = decide_node_loss(template.retry, state.retries_used, state.node_retries_used, max_eviction_restarts)
    if cause and not decision.retry:
        return RetryDecision(False, decision.reason.replace("lost its node", cause, 1))
    return decision


def spent_budget(decision: RetryDecision) -> bool:
    """A failure because the retry budget or nodeHealth.maxEvictionRestarts ran out."""
    return "exhausted" in decision.reason or "maxEvictionRestarts" in decision.reason
