"""`scheduler.defaultMemoryPerCore`: work that asks no memory gets the cluster's default per core at submission,
and the submission says so; work that asks keeps its own, and 0 (unset) leaves it without a limit."""

from __future__ import annotations

from uuid import uuid4

import pytest

from domain.app import Invalid
from domain.scheduler.config import validate_config
from tests.unit.app.builders import ADMIN, T0, app, user

GiB = 1 << 30
TWO_STEPS = """
version: v4
jobs:
  bare:
    image: {uri: docker://alpine}
    script: echo bare
    resource: {cpu: {cores: 2}}
  sized:
    image: {uri: docker://alpine}
    script: echo sized
    resource: {cpu: {cores: 2}, memory: {size: 1GiB}}
services:
  web:
    image: {uri: docker://nginx}
    script: nginx
"""


def submitted(roving, text=TWO_STEPS):
    wid = uuid4()
    warnings = roving.submit_workflow(wid, "w", text, 0, None, user(), T0)
    return roving.repository.get(wid), warnings


def memory(workflow, stage):
    return workflow.stages[stage].spec.resources.memory_bytes


def test_work_asking_no_memory_gets_the_cluster_default_per_core_and_is_told_so():
    roving = app()
    roving.change_config({"scheduler.defaultMemoryPerCore": "2GiB"}, ADMIN, T0)
    workflow, warnings = submitted(roving)
    assert (memory(workflow, "bare"), memory(workflow, "sized"), memory(workflow, "web")) == (4 * GiB, GiB, 2 * GiB)
    notes = {w.path: w.message for w in warnings}
    assert notes["jobs.bare.resource.memory"] == (
        "no memory requested: the cluster's default of 2 GiB per core applies (4 GiB for 2 cores)")
    assert "services.web.resource.memory" in notes and "jobs.sized.resource.memory" not in notes


def test_without_the_setting_work_asking_no_memory_stays_unlimited_as_before():
    workflow, warnings = submitted(app())
    assert (memory(workflow, "bare"), memory(workflow, "sized")) == (0, GiB)
    assert [w for w in warnings if w.path.endswith("resource.memory")] == []


def test_the_default_memory_per_core_is_a_memory_size_or_refused_naming_the_key():
    config, _, errors = validate_config({"scheduler": {"defaultMemoryPerCore": "512MiB"}})
    assert errors == [] and config.default_memory_per_core == 512 * 2**20
    with pytest.raises(Invalid) as refused:
        app().change_config({"scheduler.defaultMemoryPerCore": "lots"}, ADMIN, T0)
    assert "scheduler.defaultMemoryPerCore" in str(refused.value) and "memory size" in str(refused.value)


def test_roving_run_help_names_the_setting_its_default_memory_comes_from(capsys):
    from api.cli.main import main
    with pytest.raises(SystemExit):
        main(["run", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "scheduler.defaultMemoryPerCore" in text and "no memory limit" in text


def test_validate_says_what_submission_will_do_with_the_default_memory():
    from domain.app import ReadModelFunctions
    from domain.scheduler.snapshot import Definition, NodeShape

    small = [Definition(id="small", max_nodes=1, shape=NodeShape(cpu=8, memory=3 * GiB, node="small-1"))]
    roving = app(ReadModelFunctions(definitions=lambda: small))
    roving.change_config({"scheduler.defaultMemoryPerCore": "2GiB"}, ADMIN, T0)
    found = roving.validate_workflow(TWO_STEPS, user())
    assert "jobs.bare.resource.memory" in {w.path for w in found["warnings"]}
    assert any("memory 4 GiB > 3 GiB per node" in e.message for e in found["errors"])  # 2 cores x 2 GiB


ZERO_SIZES = """
version: v4
defaults:
  job: {resource: {memory: {size: 0}}}
jobs:
  zero:
    image: {uri: docker://alpine}
    script: echo zero
    resource: {cpu: {cores: 2}, memory: {size: 0}}
  zero_text:
    image: {uri: docker://alpine}
    script: echo zero
    resource: {memory: {size: 0GiB, by-core: true}}
  from_defaults:
    image: {uri: docker://alpine}
    script: echo defaults
"""


def test_a_memory_size_of_zero_gets_the_cluster_default_instead_of_running_without_a_limit():
    roving = app()
    roving.change_config({"scheduler.defaultMemoryPerCore": "2GiB"}, ADMIN, T0)
    workflow, warnings = submitted(roving, ZERO_SIZES)
    assert [memory(workflow, s) for s in ("zero", "zero_text", "from_defaults")] == [4 * GiB, 2 * GiB, 2 * GiB]
    assert {"jobs.zero.resource.memory", "jobs.zero_text.resource.memory"} <= {w.path for w in warnings}


def test_without_the_setting_a_memory_size_of_zero_still_means_no_limit():
    workflow, _ = submitted(app(), ZERO_SIZES)
    assert [memory(workflow, s) for s in ("zero", "zero_text", "from_defaults")] == [0, 0, 0]


def test_a_changed_default_applies_to_the_next_submission_and_an_unset_one_stops_applying():
    roving = app()
    roving.change_config({"scheduler.defaultMemoryPerCore": "2GiB"}, ADMIN, T0)
    assert memory(submitted(roving)[0], "bare") == 4 * GiB
    roving.change_config({"scheduler.defaultMemoryPerCore": "1GiB"}, ADMIN, T0)
    assert memory(submitted(roving)[0], "bare") == 2 * GiB
    roving.change_config({"scheduler.defaultMemoryPerCore": None}, ADMIN, T0)
    assert memory(submitted(roving)[0], "bare") == 0
