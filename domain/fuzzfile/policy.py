"""Step policy rules: execute timeout, `retry` (on / attempts) and the older `restart`, checked and resolved."""

from __future__ import annotations

import msgspec

from domain.durations import DurationError, parse_duration
from domain.fuzzfile.blocks import Policy, Retry
from domain.fuzzfile.limits import MAX_EXECUTE_SECONDS, MAX_RETRY_ATTEMPTS, out_of_range
from domain.fuzzfile.schema import Problem

NODE = "node"
UNRETRIABLE = {130: "SIGINT", 143: "SIGTERM"}
RESTARTS = ("on-node-fault", "never")
DEFAULT_ATTEMPTS = 1


class RetryRule(msgspec.Struct, frozen=True, omit_defaults=True):
    """What a step retries on and its one shared budget; attempts None means only the cluster cap applies."""

    exit_codes: list[int] = []
    on_node: bool = False
    attempts: int | None = 0

    def retries_exit(self, code: int) -> bool:
        return code in self.exit_codes

    @property
    def retries_anything(self) -> bool:
        return self.on_node or bool(self.exit_codes)


NO_RETRY = RetryRule()


def check_policy(policy: Policy | None, path: str) -> tuple[list[Problem], list[Problem]]:
    """(errors, warnings) for one step's policy at `path` (e.g. `jobs.train.policy`)."""
    if policy is None:
        return [], []
    errors: list[Problem] = []
    warnings: list[Problem] = []
    if policy.timeout is not None and policy.timeout.execute is not None:
        try:
            seconds = parse_duration(policy.timeout.execute)
        except DurationError as error:
            errors.append(Problem(f"{path}.timeout.execute", str(error)))
        else:
            if seconds > MAX_EXECUTE_SECONDS:  # the scheduler adds it to now: a deadline must stay a real date
                message = f"an execute timeout may be at most {MAX_EXECUTE_SECONDS // 86_400} days ({MAX_EXECUTE_SECONDS:,}s)"
                errors.append(Problem(f"{path}.timeout.execute", f"{message}, got {seconds:,.0f}s"))
    if policy.restart is not None and policy.restart not in RESTARTS:
        errors.append(Problem(f"{path}.restart", f"restart must be one of {', '.join(RESTARTS)}"))
    if policy.restart is not None and policy.retry is not None:
        message = "set either restart or retry, not both (restart: on-node-fault is the same as retry: {on: [node]})"
        errors.append(Problem(path, message))
    if policy.retry is not None:
        _check_retry(policy.retry, f"{path}.retry", errors, warnings)
    return errors, warnings


def _check_retry(retry: Retry, path: str, errors: list[Problem], warnings: list[Problem]) -> None:
    if retry.on is None:
        warnings.append(Problem(f"{path}.on", "retry has no `on`, so nothing is retried; add on: [node] and/or exit codes"))
    for index, cause in enumerate(retry.on or []):
        problem = _cause_problem(cause)
        if problem:
            errors.append(Problem(f"{path}.on[{index}]", problem))
    if retry.attempts is not None and retry.attempts < 1:
        errors.append(Problem(f"{path}.attempts", "attempts must be at least 1 (it is the retry budget shared by every cause)"))
    elif retry.attempts is not None and (message := out_of_range(retry.attempts, 1, MAX_RETRY_ATTEMPTS, "attempts")):
        errors.append(Problem(f"{path}.attempts", message))


def _cause_problem(cause: str | int) -> str | None:
    if isinstance(cause, str):
        return None if cause == NODE else "each entry must be `node` or an exit code from 1 to 255"
    if cause in UNRETRIABLE:
        return f"exit {cause} means the job was stopped by {UNRETRIABLE[cause]} on purpose; it cannot be retried"
    if not 1 <= cause <= 255:
        return f"exit code {cause} is out of range; exit codes to retry are 1 to 255"
    return None


def retry_rule(policy: Policy | None) -> RetryRule:
    """The effective rule of a validated policy: restart: on-node-fault means retry: {on: [node]}."""
    if policy is None:
        return NO_RETRY
    if policy.restart == "on-node-fault":
        return RetryRule(on_node=True, attempts=None)
    if policy.retry is None or not policy.retry.on:
        return NO_RETRY
    codes = sorted({c for c in policy.retry.on if isinstance(c, int)})
    attempts = policy.retry.attempts if policy.retry.attempts is not None else DEFAULT_ATTEMPTS
    return RetryRule(exit_codes=codes, on_node=NODE in policy.retry.on, attempts=attempts)


def execute_timeout(policy: Policy | None) -> float | None:
    """Seconds a validated policy lets the step run, or None when it sets no timeout."""
    if policy is None or policy.timeout is None or policy.timeout.execute is None:
        return None
    return parse_duration(policy.timeout.execute)
