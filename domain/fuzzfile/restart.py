"""Supervised services: `policy.restart: on-failure` restarts a service that exits non-zero, each restart a new
attempt (an event) after a backoff that doubles from `roving-restart.backoff` up to `max-backoff`, within a budget
of `roving-restart.attempts` restarts; `on-node-fault` restarts it after its node is lost; `never` is the default."""

from __future__ import annotations

from domain.durations import DurationError, parse_duration
from domain.fuzzfile.decode import join
from domain.fuzzfile.limits import MAX_RETRY_ATTEMPTS, bounded
from domain.fuzzfile.policy import NO_RETRY, RetryRule
from domain.fuzzfile.schema import Problem, Service

SERVICE_RESTARTS = ("on-failure", "on-node-fault", "never")
DEFAULT_RESTARTS = 5
DEFAULT_BACKOFF = 1.0
DEFAULT_MAX_BACKOFF = 60.0
MAX_BACKOFF = 3600.0
FAILURES = list(range(1, 256))  # a service killed by its liveness probe ends by SIGTERM: that is a failure too


def check_restart(service: Service, path: str) -> tuple[list[Problem], list[Problem]]:
    errors: list[Problem] = []
    warnings: list[Problem] = []
    policy = service.policy
    if policy is not None:
        if policy.restart is not None and policy.restart not in SERVICE_RESTARTS:
            errors.append(Problem(join(join(path, "policy"), "restart"),
                                  f"a service's restart must be one of {', '.join(SERVICE_RESTARTS)}"))
        if policy.timeout is not None or policy.retry is not None:
            warnings.append(Problem(join(path, "policy"), "services use only policy.restart; the rest is ignored"))
    restart = service.roving_restart
    if restart is None:
        return errors, warnings
    where = join(path, "roving-restart")
    bounded(errors, f"{where}.attempts", restart.attempts, 1, MAX_RETRY_ATTEMPTS, "attempts")
    for key, value in (("backoff", restart.backoff), ("max-backoff", restart.max_backoff)):
        if value is not None and (problem := _seconds_problem(value)):
            errors.append(Problem(f"{where}.{key}", problem))
    return errors, warnings


def service_retry(service: Service) -> RetryRule:
    restart = service.policy.restart if service.policy is not None else None
    if restart == "on-node-fault":
        return RetryRule(on_node=True, attempts=None)
    if restart != "on-failure":
        return NO_RETRY
    attempts = service.roving_restart.attempts if service.roving_restart is not None else None
    return RetryRule(exit_codes=FAILURES, on_node=True, attempts=attempts or DEFAULT_RESTARTS)


def backoff_seconds(service: Service) -> tuple[float, float]:
    """(first backoff, most backoff) of an on-failure service; (0, 0) for any other."""
    if service.policy is None or service.policy.restart != "on-failure":
        return 0.0, 0.0
    restart = service.roving_restart
    first = restart.backoff if restart is not None and restart.backoff is not None else DEFAULT_BACKOFF
    most = restart.max_backoff if restart is not None and restart.max_backoff is not None else DEFAULT_MAX_BACKOFF
    return parse_duration(first), parse_duration(most)


def restart_delay(attempt: int, first: float, most: float) -> float:
    """Seconds to wait before attempt `attempt` (2 is the first restart): first, doubling, at most `most`."""
    if attempt < 2 or first <= 0:
        return 0.0
    return min(first * (1 << min(attempt - 2, 30)), max(most, first))


def _seconds_problem(value: str | int | float) -> str | None:
    try:
        seconds = parse_duration(value)
    except DurationError as error:
        return str(error)
    return None if seconds <= MAX_BACKOFF else f"a backoff is at most {MAX_BACKOFF:g}s"
