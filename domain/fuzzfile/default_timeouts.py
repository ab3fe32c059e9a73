"""The cluster's default execute timeouts (`scheduler.defaultExecuteTimeout`, per profile
`scheduler.profileExecuteTimeouts`), given at submission to each job that sets none, as Slurm's partition
DefaultTime is; and the warning for a job that still has none: the scheduler backfills only work whose end it
knows (domain.scheduler.backfill), so such a job waits behind every reservation."""

from __future__ import annotations

from collections.abc import Mapping

import msgspec

from domain.fuzzfile.blocks import Policy, Timeout
from domain.fuzzfile.layering import layers_of, step_policy
from domain.fuzzfile.policy import execute_timeout
from domain.fuzzfile.schema import Job, Problem
from domain.fuzzfile.schema import Workflow as Fuzzfile

NO_BACKFILL = ("no execute timeout: the scheduler cannot backfill it into a gap before reserved work (it waits "
               "behind every reservation); set policy.timeout.execute, or ask an admin for the cluster's "
               "scheduler.defaultExecuteTimeout")


def _timed(definition: Fuzzfile, job: Job) -> bool:
    return execute_timeout(step_policy(layers_of(definition.defaults, "job"), job)) is not None


def with_default_timeouts(definition: Fuzzfile, default: float, by_profile: Mapping[str, float]) -> Fuzzfile:
    """Each job without an execute timeout (its own or its defaults') gets its profile's, else `default` (0: none)."""
    if not definition.jobs:
        return definition
    jobs = dict(definition.jobs)
    for name, job in jobs.items():
        seconds = by_profile.get(job.profile or "") or default
        if seconds and not _timed(definition, job):
            policy = job.policy or Policy()
            timeout = msgspec.structs.replace(policy.timeout or Timeout(), execute=f"{seconds:g}s")
            jobs[name] = msgspec.structs.replace(job, policy=msgspec.structs.replace(policy, timeout=timeout))
    return msgspec.structs.replace(definition, jobs=jobs)


def no_backfill_warnings(definition: Fuzzfile) -> list[Problem]:
    """A warning naming each job that has no execute timeout (after the cluster's defaults were given)."""
    return [Problem(path=f"jobs.{name}.policy.timeout.execute", message=NO_BACKFILL)
            for name, job in (definition.jobs or {}).items() if not _timed(definition, job)]
