"""Seeded workflows: DAGs of jobs and services, task arrays, retries, readiness, endpoints, projects and licenses;
each job traces itself.

Every stage appends `start`, `tick` and `end` lines (stage key, time, work dir, pid) to one trace file, so the
checker knows from the processes themselves where and when each stage attempt really ran.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

IMAGE = {"uri": "docker://alpine:3.20"}
ENDED = frozenset({"FINISHED", "FAILED", "CANCELED"})


@dataclass
class Planned:
    """One generated workflow: its Fuzzfile (as a dict) and how many job runs it asks for."""

    index: int
    definition: dict[str, Any]
    jobs: int
    services: int
    name: str = ""
    kinds: list[str] = field(default_factory=list)


def traced(trace: str, body: str) -> str:
    """Wrap `body` so the process records its start, its liveness and its end with the exit code."""
    key = '"$FB_WORKFLOW_ID/$FB_JOB_NAME/${FB_TASK_ID:--}"'
    stamp = f'{key} "$(date +%s.%N)" "$PWD" $$'
    return (f"T={trace}\n"
            f"echo start {stamp} >> $T\n"
            f"tick() {{ echo tick {stamp} >> $T; }}\n"
            f"{body}\n"
            f"rc=$?\n"
            f"echo end {stamp} $rc >> $T\n"
            f"exit $rc\n")


def ticking(seconds: float) -> str:
    """Sleep in half-second steps, each step leaving a tick in the trace."""
    steps = max(1, int(seconds * 2))
    return f"i=0; while [ $i -lt {steps} ]; do sleep 0.5; tick; i=$((i+1)); done; true"


def job_body(rng: random.Random) -> tuple[str, str, dict[str, Any] | None]:
    """(kind, shell body, retry policy or None), trivial commands mostly, a few long and flaky ones."""
    kind = rng.choices(["true", "sleep", "exit3", "long", "flaky"], weights=[3, 3, 1, 2, 1])[0]
    if kind == "true":
        return kind, "true", None
    if kind == "sleep":
        return kind, "sleep 0.1", None
    if kind == "exit3":
        retry = {"on": [3], "attempts": 2} if rng.random() < 0.3 else None
        return kind, "(exit 3)", retry
    if kind == "long":
        retry = {"on": ["node"], "attempts": rng.randint(2, 3)} if rng.random() < 0.6 else None
        return kind, ticking(rng.uniform(1.0, 4.0)), retry
    # Fails its first attempt on each node-independent marker, then succeeds: exercises retry on an exit code.
    marker = '"$PWD/../.flaky-${FB_JOB_NAME}-${FB_TASK_ID:--}"'
    return kind, f"if [ ! -f {marker} ]; then touch {marker}; (exit 75); else true; fi", \
        {"on": [75, "node"], "attempts": 3}


def service(rng: random.Random, trace: str, index: int) -> dict[str, Any]:
    """A service that ticks until stopped (at most ~2 min); readiness by exec, or TCP with an endpoint."""
    body = "j=0; while [ $j -lt 240 ]; do sleep 0.5; tick; j=$((j+1)); done"
    spec: dict[str, Any] = {"image": IMAGE, "resource": {"cpu": {"cores": 1}, "memory": {"size": "64MiB"}}}
    if rng.random() < 0.4:
        port = rng.randint(20000, 59999)
        body = f"python3 -m http.server {port} --bind 127.0.0.1 >/dev/null 2>&1 &\n{body}\nkill %1"
        spec["readiness-probe"] = {"tcp-socket": {"port": port}, "period-seconds": 1}
        spec["network"] = {"ports": [{"name": "http", "port": port}],
                           "endpoints": [{"name": f"soak{index}", "port-name": "http"}]}
    else:
        spec["readiness-probe"] = {"exec": {"command": ["true"]}, "period-seconds": 1}
    spec["script"] = traced(trace, body)
    return spec


PROJECTS = ("soak/a", "soak/a", "soak/b", None)  # None: the cluster's default project (ops.soak.limits)
LICENSES = ({"lic": 1}, {"lic": 2}, {"seat": 1}, {"lic": 1, "seat": 1})


def limited(seed: int, index: int, definition: dict[str, Any]) -> None:
    """A project for the workflow and licenses for some jobs, from their own seeded stream (the rest of the
    workflow is what it would be without them)."""
    rng = random.Random(f"{seed}:{index}:limits")
    project = rng.choice(PROJECTS)
    if project is not None:
        definition["project"] = project
    for spec in definition["jobs"].values():
        if rng.random() < 0.3:
            spec["resource"]["shared"] = dict(rng.choice(LICENSES))


def workflow(seed: int, index: int, trace: str, pools: tuple[str, ...] = ()) -> Planned:
    """The index-th workflow of a seed: the same on every run, whichever thread submits it. With `pools`
    (provisioners' `pool` annotations), some jobs ask for one; their draws come from a random of their own, so a
    seed's workflows are otherwise the same with and without."""
    rng, pool_rng = random.Random(f"{seed}:{index}"), random.Random(f"{seed}:{index}:pool")
    jobs: dict[str, Any] = {}
    services: dict[str, Any] = {}
    if rng.random() < 0.25:
        services["s0"] = service(rng, trace, index)
    runs, kinds = 0, []
    for j in range(rng.randint(1, 4)):
        kind, body, retry = job_body(rng)
        kinds.append(kind)
        spec: dict[str, Any] = {"image": IMAGE, "script": traced(trace, body),
                                "resource": {"cpu": {"cores": 1}, "memory": {"size": f"{rng.choice([64, 128, 256])}MiB"}},
                                "policy": {"timeout": {"execute": "60s"}}}
        if retry:
            spec["policy"]["retry"] = retry
        if pools and pool_rng.random() < 0.3:
            spec["resource"]["annotations"] = {"pool": pool_rng.choice(pools)}
        if rng.random() < 0.2:
            end = rng.randint(2, 5)
            spec["task-array"] = {"start": 1, "end": end, "concurrency": rng.randint(1, 3)}
            runs += end
        else:
            runs += 1
        needs = []
        if j > 0 and rng.random() < 0.5:
            needs.append({"name": f"j{rng.randrange(j)}", "status": rng.choices(["FINISHED", "FAILED"], [7, 3])[0]})
        if services and rng.random() < 0.5:
            needs.append({"name": "s0", "status": "RUNNING"})
        if needs:
            spec["depends-on"] = needs
        jobs[f"j{j}"] = spec
    definition: dict[str, Any] = {"version": "v4", "jobs": jobs}
    if services:
        definition["services"] = services
    limited(seed, index, definition)
    return Planned(index=index, definition=definition, jobs=runs, services=len(services),
                   name=f"soak-{seed}-{index}", kinds=kinds)
