"""A job that runs an image its own workflow builds runs only where that image can run (the oci runtime)."""

from __future__ import annotations

from uuid import uuid4

import pytest

from domain.app import Invalid
from domain.scheduler.snapshot import Definition, NodeShape
from tests.unit.app.builders import T0, app, user
from tests.unit.fuzzfile.test_image_builds import TOOLS, stages

RUNTIME = "roving.io/runtime"
ARRAY = TOOLS + """
  sweep:
    image: {uri: fuzzball://user/tools}
    command: ["true"]
    task-array: {start: 1, end: 3}
    resource: {annotations: {gpu.vendor: any}}
"""


def test_a_job_on_its_workflow_s_built_image_asks_for_the_oci_runtime_and_one_on_a_registry_image_does_not():
    found = stages(ARRAY)
    assert found["use"].resources.annotations == {RUNTIME: "oci"}
    assert found["plain"].resources.annotations == {}
    assert all(found[f"sweep[{i}]"].resources.annotations == {"gpu.vendor": "any", RUNTIME: "oci"} for i in (1, 2, 3))


def test_a_cluster_whose_nodes_cannot_run_built_images_refuses_the_job_at_submission_naming_it():
    host = Definition(id="host-pool", max_nodes=2, annotations={RUNTIME: "host"}, shape=NodeShape(cpu=8, memory=1 << 34))
    with pytest.raises(Invalid) as refused:
        app().submit_workflow(uuid4(), "tools", TOOLS, 0, None, user(), T0, definitions=[host])
    named = {p.path: p.message for p in refused.value.problems}
    assert "roving.io/runtime=oci" in named["jobs.use.resource"]
    assert not any(path.startswith("jobs.plain") for path in named)
