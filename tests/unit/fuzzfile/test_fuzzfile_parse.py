"""Given a Fuzzfile text, when it is parsed, then users get the definition or every problem with its path."""

from domain.fuzzfile import parse_fuzzfile

VALID = """
version: v4
jobs:
  train:
    image: {uri: docker://alpine:3.20}
    script: echo hi
    resource: {cpu: {cores: 2}, memory: {size: 1GiB}}
"""


def job(body: str, name: str = "train", extra: str = "") -> str:
    indented = "\n".join("    " + line for line in body.strip().splitlines())
    return f"version: v4\n{extra}jobs:\n  {name}:\n    image: {{uri: docker://alpine:3.20}}\n{indented}\n"


def paths(text: str) -> dict[str, str]:
    return {p.path: p.message for p in parse_fuzzfile(text).errors}


def test_a_valid_file_gives_a_definition_and_no_errors():
    result = parse_fuzzfile(VALID)
    assert result.errors == []
    assert result.definition.jobs["train"].resource.cpu.cores == 2


def test_every_problem_is_reported_at_once_with_its_path():
    text = job("script: x\nresource: {cpu: {cores: two}}\npolicy: {retry: {on: [node, 130], attempts: 2}}")
    text = text.replace("script: x", "script: x\ncwdd: /x".replace("\n", "\n    "))
    errors = paths(text)
    assert "jobs.train.cwdd" in errors
    assert "jobs.train.resource.cpu.cores" in errors


def test_an_unknown_key_is_named_with_the_nearest_valid_key():
    errors = paths(job("script: x\ndepend-on: [{name: a}]"))
    assert errors["jobs.train.depend-on"] == "unknown key `depend-on`; did you mean `depends-on`?"


def test_semantic_errors_all_come_back_together():
    text = job("script: x\ncwd: data\nenv: [NOEQUALS]\npolicy: {retry: {on: [node, 143, 300], attempts: 2}}")
    errors = paths(text)
    retry = "jobs.train.policy.retry"
    assert set(errors) >= {"jobs.train.cwd", "jobs.train.env[0]", f"{retry}.on[1]", f"{retry}.on[2]"}
    assert "SIGTERM" in errors["jobs.train.policy.retry.on[1]"]


def test_retry_without_on_is_accepted_with_a_warning_that_nothing_is_retried():
    result = parse_fuzzfile(job("script: x\npolicy: {retry: {attempts: 3}}"))
    assert result.errors == []
    assert [w.path for w in result.warnings] == ["jobs.train.policy.retry.on"]


def test_restart_and_retry_on_one_step_is_an_error():
    errors = paths(job("script: x\npolicy: {restart: on-node-fault, retry: {on: [node]}}"))
    assert "set either restart or retry" in errors["jobs.train.policy"]


def test_exit_codes_outside_1_to_255_are_rejected():
    errors = paths(job("script: x\npolicy: {retry: {on: [0, 75], attempts: 1}}"))
    assert list(errors) == ["jobs.train.policy.retry.on[0]"]


def test_an_image_without_a_supported_scheme_is_rejected():
    text = job("script: x").replace("docker://alpine:3.20", "alpine:3.20")
    assert "must start with docker://" in paths(text)["jobs.train.image.uri"]


def test_oras_and_fuzzball_images_are_accepted():
    for uri in ("oras://r/x.sif", "fuzzball://x", "fb://x"):
        assert parse_fuzzfile(job("script: x").replace("docker://alpine:3.20", uri)).errors == []


def test_env_values_and_secret_references_are_never_echoed_in_errors():
    text = job("script: x\nenv: ['1BAD=hunter2', 'TOKEN hunter3']").replace("docker://alpine:3.20", "secret://user/TOKEN")
    messages = " ".join(p.message for p in parse_fuzzfile(text).errors)
    assert "hunter" not in messages and "secret://user/TOKEN" not in messages
    type_error = job("script: x\nenv: {PASSWORD: hunter4}")
    assert "hunter4" not in " ".join(p.message for p in parse_fuzzfile(type_error).errors)


def test_a_dependency_cycle_is_rejected_naming_the_cycle():
    text = """
version: v4
jobs:
  a: {image: {uri: docker://x}, script: x, depends-on: [{name: c}]}
  b: {image: {uri: docker://x}, script: x, depends-on: [{name: a}]}
  c: {image: {uri: docker://x}, script: x, depends-on: [{name: b}]}
"""
    messages = [p.message for p in parse_fuzzfile(text).errors]
    assert len(messages) == 1 and messages[0].startswith("dependency cycle: ")
    assert set(messages[0].removeprefix("dependency cycle: ").split(" -> ")) == {"a", "b", "c"}


def test_an_unknown_dependency_is_named_with_a_suggestion():
    text = job("script: x\ndepends-on: [{name: prep}]", extra="") + "  prepare: {image: {uri: docker://x}, script: x}\n"
    assert paths(text)["jobs.train.depends-on[0].name"] == "no job or service is named `prep`; did you mean `prepare`?"


def test_running_is_a_condition_on_services_only():
    text = job("script: x\ndepends-on: [{name: prep, status: RUNNING}]") + "  prep: {image: {uri: docker://x}, script: x}\n"
    assert "RUNNING applies to services only" in paths(text)["jobs.train.depends-on[0].status"]


def test_requires_is_deprecated_and_means_finished():
    text = job("script: x\nrequires: [prep]") + "  prep: {image: {uri: docker://x}, script: x}\n"
    result = parse_fuzzfile(text)
    assert result.errors == [] and "deprecated" in result.warnings[0].message


def test_a_workflow_without_jobs_or_services_is_rejected():
    assert "at least one job or service" in paths("version: v4\nvolumes: {}\n")["jobs"]


def test_an_unsupported_version_is_rejected():
    assert "version must be v4" in paths(VALID.replace("v4", "v3"))["version"]


def test_invalid_yaml_names_the_line():
    assert "line 3" in parse_fuzzfile("version: v4\njobs:\n  a: b: c\n").errors[0].message


def test_a_number_too_wide_to_store_is_named_by_its_path():
    wide = VALID.replace("cores: 2", "cores: 99999999999999999999")
    assert paths(wide) == {"jobs.train.resource.cpu.cores":
                           "expected a whole number from -9223372036854775808 to 9223372036854775807, "
                           "got 99999999999999999999"}


def test_task_array_concurrency_is_capped_at_200():
    errors = paths(job("script: x\ntask-array: {start: 1, end: 500, concurrency: 201}"))
    assert "between 1 and 200" in errors["jobs.train.task-array.concurrency"]


def test_a_policy_other_than_restart_on_a_service_is_ignored_with_a_warning():
    text = "version: v4\nservices:\n  web:\n    image: {uri: docker://x}\n    script: x\n    policy: {timeout: {execute: 1h}}\n"
    result = parse_fuzzfile(text)
    assert result.errors == [] and result.warnings[0].path == "services.web.policy"


def test_endpoint_rules_are_enforced_with_paths():
    text = """
version: v4
services:
  web:
    image: {uri: docker://x}
    script: x
    network:
      ports: [{name: http, port: 8080}]
      endpoints: [{name: My.App, port-name: htp, protocol: grpc, scope: world}]
"""
    errors = paths(text)
    base = "services.web.network.endpoints[0]"
    assert {f"{base}.name", f"{base}.port-name", f"{base}.protocol", f"{base}.scope"} <= set(errors)


def test_memory_and_timeout_with_bad_units_teach_the_format():
    errors = paths(job("script: x\nresource: {memory: {size: 4 gigs}}\npolicy: {timeout: {execute: 5 minutes}}"))
    assert "e.g. 512MiB" in errors["jobs.train.resource.memory.size"]
    assert "e.g. 1h30m" in errors["jobs.train.policy.timeout.execute"]


def test_mounts_must_name_a_defined_volume():
    errors = paths(job("script: x\nmounts: {/data: {volume: dta}}", extra="volumes: {data: {reference: volume://user/ephemeral}}\n"))
    assert "no volume is named `dta`" in errors['jobs.train.mounts["/data"]']
