"""The simulator with project quotas and licenses: every job ends, no quota or license is ever exceeded, and a job
that waits for licenses is not starved by smaller license users arriving after it."""
import random
from datetime import timedelta

import pytest

from domain.scheduler import NodeView, QueuedAllocation, SchedulerConfig
from domain.scheduler.simulator import SimJob, Simulator
from domain.scheduler.snapshot import ProjectLimit
from tests.unit.scheduler.builders import T0, GiB

PROJECTS = (ProjectLimit(path="phys", limits={"cpu": 24}), ProjectLimit(path="phys/lat", limits={"cpu": 12}),
            ProjectLimit(path="phys/qcd"), ProjectLimit(path="bio", limits={"cpu": 16, "memory": 48 * GiB}))
LICENSES = {"ansys": 5, "fluent": 2}


def trace(seed: int) -> tuple[list[NodeView], list[SimJob]]:
    rng = random.Random(seed)
    nodes = [NodeView(id=f"n{i}", name=f"n{i}", cpu=16, memory=64 * GiB) for i in range(4)]
    jobs = []
    for i in range(150):
        runtime = rng.randint(60, 1800)
        project = rng.choice(["phys/lat", "phys/qcd", "bio", "bio"])
        shared = {rng.choice(list(LICENSES)): rng.randint(1, 2)} if rng.random() < 0.4 else {}
        jobs.append(SimJob(runtime=runtime, allocation=QueuedAllocation(
            id=f"j{i}", workflow_id=f"w{i}", stage="main", submitted_at=T0 + timedelta(seconds=rng.randint(0, 3600)),
            cpu=rng.choice([1, 2, 4, 8]), memory=rng.choice([1, 4, 8]) * GiB, shared=shared,
            project=project,
            execute_timeout=None if rng.random() < 0.15 else runtime + rng.randint(0, 600),
            exclusive=project == "phys/qcd" and rng.random() < 0.1)))  # whole nodes fit only phys' quota
    return nodes, jobs


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_no_quota_or_license_is_ever_exceeded_and_every_job_ends(seed):
    nodes, jobs = trace(seed)
    result = Simulator(nodes, jobs, SchedulerConfig(shared_resources=LICENSES), projects=PROJECTS).run()
    assert len(result.finished) == len(jobs)
    for project in PROJECTS:
        for key, limit in project.limits.items():
            assert result.peak_projects.get(project.path, {}).get(key, 0) <= limit, (project.path, key)
    assert result.peak_projects["phys"]["cpu"] > 12  # both children ran at once, under phys' 24
    for name, total in LICENSES.items():
        assert 0 < result.peak_shared[name] <= total


def test_a_job_waiting_for_licenses_is_not_starved_by_smaller_users():
    nodes = [NodeView(id="n1", name="n1", cpu=64, memory=256 * GiB)]
    hog = QueuedAllocation(id="hog", workflow_id="w", stage="hog", submitted_at=T0 + timedelta(seconds=30),
                           shared={"ansys": 5}, execute_timeout=600, organization_priority=10)
    small = [SimJob(runtime=300, allocation=QueuedAllocation(
        id=f"s{i}", workflow_id=f"s{i}", stage="s", submitted_at=T0 + timedelta(seconds=10 * i),
        shared={"ansys": 2}, execute_timeout=300)) for i in range(30)]
    result = Simulator(nodes, [SimJob(allocation=hog, runtime=600), *small],
                       SchedulerConfig(shared_resources={"ansys": 5})).run()
    assert result.peak_shared["ansys"] <= 5
    assert result.started["hog"] <= result.predicted_start["hog"]
    assert result.started["hog"] < max(result.started[f"s{i}"] for i in range(30))
