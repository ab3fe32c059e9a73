"""A workflow's definition to submit again: as written (what submission recorded in it taken out), and a retry's,
the jobs of an ended workflow that did not all finish, as a new workflow (Argo's `resubmit --memoized`: what
finished is not run again).

A definition is kept as submission left it: its profiles bound (`roving-profile` records which revision, and the
profile's env and resources are merged in), the cluster's defaults filled in. Submitting it again binds each
`profile:` anew: a profile unchanged since merges to the same values; one changed since is refused naming the key,
as for any Fuzzfile that sets what its profile sets otherwise.

Works on the definition as submitted (the builtins of the parsed Fuzzfile): a job whose stages all FINISHED is
left out, and a kept job's dependency on it is dropped when it wanted FINISHED (that condition holds). A job
that waited on a left-out job reaching FAILED could never run now, so it is left out as well, and so, in turn, is
anything that depended on it. Services are kept whole (kept jobs may need them). A task array is one job: a retry
runs all of its tasks again.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterable, Mapping
from typing import Any

from domain.fuzzfile.schema import Problem

FINISHED = "FINISHED"


class NothingToRetry(Exception):
    """Every job finished: a retry would run nothing."""


RECORDED = "roving-profile"  # written by submission, refused in a Fuzzfile
ENDPOINT_ENV = re.compile(r"^FB_SERVICE_[A-Z0-9_]+_ENDPOINT_(URL|PATH)=")  # added by submission to every step


def as_written(definition: Mapping[str, Any]) -> dict[str, Any]:
    """The definition without what submission recorded in its steps (the bound profile, the persistent endpoints'
    variables, which submission adds again), so it can be submitted again."""
    written = copy.deepcopy(dict(definition))
    for section in ("jobs", "services"):
        for step in (written.get(section) or {}).values():
            step.pop(RECORDED, None)
            env = [e for e in step.get("env") or [] if not ENDPOINT_ENV.match(str(e))]
            if env:
                step["env"] = env
            else:
                step.pop("env", None)
    return written


def step_of(stage: str) -> str:
    return stage.split("[")[0]


def finished_steps(stages: Iterable[tuple[str, str]]) -> set[str]:
    """Steps whose every stage (every task of an array) FINISHED, from (stage name, status) pairs."""
    statuses: dict[str, set[str]] = {}
    for name, status in stages:
        statuses.setdefault(step_of(name), set()).add(status)
    return {step for step, seen in statuses.items() if seen == {FINISHED}}


def wanted(job: Mapping[str, Any]) -> list[tuple[str, str]]:
    """A job's dependencies as (name, status): `depends-on` and the deprecated `requires` (which wants FINISHED)."""
    found = [(d["name"], str(d.get("status") or FINISHED).upper()) for d in job.get("depends-on") or []]
    return found + [(name, FINISHED) for name in job.get("requires") or []]


def retry_definition(definition: Mapping[str, Any], stages: Iterable[tuple[str, str]]
                     ) -> tuple[dict[str, Any], list[str], list[Problem]]:
    """(the retry's definition, the jobs it runs again, warnings). Raises NothingToRetry when every job finished."""
    done = finished_steps(stages) & set(definition.get("jobs") or {})
    jobs = dict(definition.get("jobs") or {})
    kept = {name for name in jobs if name not in done}
    changed = True
    while changed:  # leave out what can no longer run: it waited on a left-out job reaching something else
        changed = False
        for name in sorted(kept):
            if any(dep not in kept and dep in jobs and (dep not in done or status != FINISHED)
                   for dep, status in wanted(jobs[name])):
                kept.discard(name)
                changed = True
    if not kept:
        raise NothingToRetry("every job of this workflow finished: there is nothing to retry")
    retried = copy.deepcopy(dict(definition))
    retried["jobs"] = {name: without_done(jobs[name], done) for name in jobs if name in kept}
    return retried, [name for name in jobs if name in kept], warnings(retried, done)


def without_done(job: Mapping[str, Any], done: set[str]) -> dict[str, Any]:
    """The job without its dependencies on finished jobs (they hold)."""
    kept = copy.deepcopy(dict(job))
    depends = [d for d in kept.get("depends-on") or [] if d["name"] not in done]
    requires = [n for n in kept.get("requires") or [] if n not in done]
    for key, value in (("depends-on", depends), ("requires", requires)):
        if value:
            kept[key] = value
        else:
            kept.pop(key, None)
    return kept


def warnings(retried: Mapping[str, Any], done: set[str]) -> list[Problem]:
    """What the finished jobs left in a workflow's own (ephemeral) volumes is gone: each retry starts them empty."""
    if not done:
        return []
    return [Problem(f"volumes.{name}", "ephemeral: the retried jobs start with it empty; what the finished jobs "
                                        f"({', '.join(sorted(done))}) wrote there went with their workflow")
            for name, volume in sorted((retried.get("volumes") or {}).items())
            if "ephemeral" in str((volume or {}).get("reference") or "")]
