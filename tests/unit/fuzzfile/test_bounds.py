"""Every count, size and duration in a Fuzzfile has a range: out of it, the error names the field and the bound."""

import time

import pytest

from domain.fuzzfile import parse_fuzzfile
from domain.fuzzfile.limits import MAX_DEFINITION_BYTES, MAX_READY_STAGES


def job(body: str, name: str = "train") -> str:
    indented = "\n".join("    " + line for line in body.strip().splitlines())
    return f"version: v4\njobs:\n  {name}:\n    image: {{uri: docker://alpine:3.20}}\n{indented}\n"


def errors(text: str) -> dict[str, str]:
    return {p.path: p.message for p in parse_fuzzfile(text).errors}


@pytest.mark.parametrize("body, path, bound", [
    ("command: [x]\npolicy: {timeout: {execute: 99999999999999999h}}", "jobs.train.policy.timeout.execute", "365 days"),
    ("command: [x]\npolicy: {timeout: {execute: 366d}}", "jobs.train.policy.timeout.execute", "365 days"),
    ("command: [x]\npolicy: {timeout: {execute: .inf}}", "jobs.train.policy.timeout.execute", "finite"),
    ("command: [x]\npolicy: {retry: {on: [1], attempts: 101}}", "jobs.train.policy.retry.attempts", "100"),
    ("command: [x]\ntask-array: {start: 0, end: 10000}", "jobs.train.task-array", "10,000"),
    ("command: [x]\ntask-array: {start: 0, end: 99999999999, concurrency: 10}", "jobs.train.task-array.end", "1,000,000"),
    ("command: [x]\nmultinode: {nodes: 5000}", "jobs.train.multinode.nodes", "4,096"),
    ("command: [x]\nresource: {cpu: {cores: 9223372036854775807}}", "jobs.train.resource.cpu.cores", "65,536"),
    ("command: [x]\nresource: {devices: {nvidia.com/gpu: 100000}}", 'jobs.train.resource.devices["nvidia.com/gpu"]', "1,024"),
    ("command: [x]\nresource: {memory: {size: .inf}}", "jobs.train.resource.memory.size", "finite"),
    ("command: [x]\nresource: {memory: {size: .nan}}", "jobs.train.resource.memory.size", "finite"),
    ("command: [x]\nresource: {memory: {size: 1.0e+300}}", "jobs.train.resource.memory.size", "1,125,899,906,842,624"),
    ("command: [x]\nresource: {memory: {size: 2PiB}}", "jobs.train.resource.memory.size", "1,125,899,906,842,624"),
])
def test_a_value_out_of_range_is_refused_naming_the_field_and_the_bound(body, path, bound):
    found = errors(job(body))
    assert path in found, found
    assert bound in found[path]


def test_memory_multiplied_by_cores_is_bounded_after_defaults_apply():
    text = ("version: v4\ndefaults: {resource: {cpu: {cores: 4096}}}\njobs:\n  train:\n"
            "    image: {uri: docker://alpine}\n    command: [x]\n    resource: {memory: {size: 1TiB, by-core: true}}\n")
    assert "1 PiB" in errors(text)["jobs.train.resource.memory"]


def test_service_replicas_and_probe_times_are_bounded():
    text = ("version: v4\nservices:\n  web:\n    image: {uri: docker://nginx}\n    command: [nginx]\n"
            "    replicas: 1000\n    readiness-probe: {tcp-socket: {port: 80}, period-seconds: 9999999}\n")
    found = errors(text)
    assert "100" in found["services.web.replicas"]
    assert "86,400s" in found["services.web.readiness-probe.period-seconds"]


def test_values_at_their_bounds_are_accepted():
    body = ("command: [x]\npolicy: {timeout: {execute: 365d}, retry: {on: [1], attempts: 100}}\n"
            "resource: {cpu: {cores: 65536}, memory: {size: 1PiB}, devices: {gpu: 1024}}")
    assert parse_fuzzfile(job(body)).errors == []


def test_more_jobs_than_one_submission_can_start_is_refused_naming_the_cap():
    jobs = "".join(f"  j{i}:\n    image: {{uri: docker://alpine}}\n    command: [x]\n" for i in range(400))
    found = errors("version: v4\njobs:\n" + jobs)
    assert f"at most {MAX_READY_STAGES} stages" in found["jobs"]
    assert "400" in found["jobs"]


def test_a_large_task_array_fits_when_its_concurrency_does():
    assert parse_fuzzfile(job("command: [x]\ntask-array: {start: 1, end: 5000, concurrency: 100}")).ok
    assert "jobs" in errors(job("command: [x]\ntask-array: {start: 1, end: 5000}"))


def test_a_definition_too_large_for_one_event_is_refused_naming_the_limit():
    found = errors(job("script: " + "x" * (MAX_DEFINITION_BYTES + 1)))
    assert f"{MAX_DEFINITION_BYTES:,}-byte limit" in found[""]


def test_a_yaml_alias_bomb_is_refused_quickly():
    levels = "".join(f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 9)}]\n" for i in range(9))
    text = "version: v4\na: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n" + levels + \
        "jobs: {train: {image: {uri: docker://alpine}, command: *j}}\n"
    started = time.monotonic()
    found = parse_fuzzfile(text).errors
    assert time.monotonic() - started < 5
    assert "expands to more than 1,000,000 values" in found[0].message


def test_an_alias_inside_its_own_anchor_is_refused():
    found = errors("version: v4\njobs: &loop\n  train: *loop\n")
    assert "never ends" in found["jobs.train"]


def test_replica_port_ranges_must_stay_apart_and_below_65536():
    found = errors("version: v4\nservices:\n  web:\n    image: {uri: docker://alpine}\n    command: [x]\n"
                   "    replicas: 3\n    network:\n"
                   "      ports: [{name: http, port: 8000}, {name: admin, port: 8001}, {name: top, port: 65534}]\n")
    assert "overlap those of port `http`" in found["services.web.network.ports[1].port"]
    assert "past 65535" in found["services.web.network.ports[2].port"]


def chain(length: int) -> str:
    jobs = "".join(f"  j{i}:\n    image: {{uri: docker://alpine}}\n    command: [x]\n"
                   + (f"    depends-on: [{{name: j{i - 1}}}]\n" if i else "") for i in range(length))
    return "version: v4\njobs:\n" + jobs


def test_a_long_dependency_chain_is_accepted_it_never_starts_more_than_one_stage_at_once():
    assert parse_fuzzfile(chain(3000)).errors == []


def test_one_job_whose_end_would_start_too_many_dependents_at_once_is_named():
    fan = "".join(f"  d{i}:\n    image: {{uri: docker://alpine}}\n    command: [x]\n    depends-on: [{{name: root}}]\n"
                  for i in range(400))
    found = errors("version: v4\njobs:\n  root:\n    image: {uri: docker://alpine}\n    command: [x]\n" + fan)
    assert "when root ends, its 400 dependents" in found["jobs.root"]


def test_more_steps_than_a_cascade_of_skips_can_name_are_refused():
    found = errors(chain(5001))
    assert "at most 5,000 jobs and services" in found["jobs"]
