"""Given a valid Fuzzfile, when its stages are listed, then defaults, units and task arrays are applied."""


from domain.fuzzfile import list_stages, parse_fuzzfile
from tests.reference import fuzzball

EXAMPLES = fuzzball("examples")


def stages_of(text: str):
    result = parse_fuzzfile(text)
    assert result.errors == []
    return {s.name: s for s in list_stages(result.definition)}


def test_a_script_without_a_shebang_runs_with_bin_sh():
    stage = stages_of("version: v4\njobs:\n  a: {image: {uri: docker://x}, script: 'echo hi'}\n")["a"]
    assert stage.script == "#!/bin/sh\necho hi"


def test_a_script_with_its_own_shebang_is_kept():
    stage = stages_of("version: v4\njobs:\n  a: {image: {uri: docker://x}, script: \"#!/bin/bash\\necho\"}\n")["a"]
    assert stage.script.startswith("#!/bin/bash")


def test_memory_by_core_is_multiplied_by_the_cores():
    resource = "{cpu: {cores: 4}, memory: {size: 2GiB, by-core: true}}"
    text = f"version: v4\njobs:\n  a: {{image: {{uri: docker://x}}, script: x, resource: {resource}}}\n"
    assert stages_of(text)["a"].resources.memory_bytes == 4 * 2 * 2**30


def test_defaults_apply_and_the_step_overrides_them():
    text = """
version: v4
defaults:
  env: [SHARED=1, MODE=default]
  job:
    resource: {cpu: {cores: 8}, devices: {nvidia.com/gpu: 1}}
    policy: {timeout: {execute: 2h}}
jobs:
  a: {image: {uri: docker://x}, script: x, env: [MODE=job], resource: {cpu: {cores: 2}}}
"""
    stage = stages_of(text)["a"]
    assert stage.env == {"SHARED": "1", "MODE": "job"}
    assert stage.resources.cpu_cores == 2 and stage.resources.devices == {"nvidia.com/gpu": 1}
    assert stage.execute_timeout_seconds == 7200


def test_a_task_array_gives_one_task_stage_per_id_with_its_task_id():
    text = "version: v4\njobs:\n  r: {image: {uri: docker://x}, script: x, task-array: {start: 3, end: 5, concurrency: 2}}\n"
    stages = stages_of(text)
    assert list(stages) == ["r[3]", "r[4]", "r[5]"]
    assert [s.env["FB_TASK_ID"] for s in stages.values()] == ["3", "4", "5"]
    assert {s.kind for s in stages.values()} == {"task"}


def test_restart_on_node_fault_means_retry_on_node():
    text = "version: v4\njobs:\n  a: {image: {uri: docker://x}, script: x, policy: {restart: on-node-fault}}\n"
    retry = stages_of(text)["a"].retry
    assert retry.on_node and retry.exit_codes == []


def test_a_multinode_job_asks_for_its_node_count():
    stage = stages_of((EXAMPLES / "v1-openmpi-hello-world.fz").read_text())["mpi-hello-world"]
    assert stage.resources.nodes == 2 and stage.resources.memory_bytes == 10**9


def test_a_v1_file_is_upgraded_with_a_warning_per_changed_construct():
    result = parse_fuzzfile((EXAMPLES / "v1-blast.yaml").read_text())
    assert result.errors == [] and result.definition.version == "v4"
    warned = {w.path for w in result.warnings}
    assert {"version", "jobs.create-dirs.mounts", "jobs.run-blast.requires", "volumes.blast-volume.name"} <= warned
    stages = {s.name: s for s in list_stages(result.definition)}
    assert stages["make-blast-database"].dependencies[0].name == "retrieve-query-sequence"
    assert stages["run-blast"].mounts == {"/data": "blast-volume"}
