"""The agent's command line, RunSpec building from assignments, and capacity detection."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest

from adapters import sysinfo
from api.agent.args import UsageError, parse_args
from api.agent.main import agent_main
from api.agent.starts import build_spec
from tests.unit.agent.fake_api import A1, wire

ENV = {"ROVING_TOKEN": "tok"}
DETECTED = sysinfo.Capacity(cpu=64, memory=256 * 2**30, devices={"nvidia.com/gpu": 8})


def parse(*argv: str, env=ENV):
    return parse_args(["--api", "http://127.0.0.1:8080", *argv], env=env, detect=lambda: DETECTED)


def test_declared_capacity_overrides_what_the_machine_has():
    config = parse("--node", "n1", "--cpus", "8", "--memory", "32GiB", "--device", "nvidia.com/gpu=2",
                   "--device", "xilinx.com/fpga=1", "--annotation", "rack=r1", "--annotation", "zone=a",
                   "--definition", "pool-a", "--metrics-port", "9105", "--heartbeat", "500ms")
    assert (config.node, config.cpus, config.memory) == ("n1", 8, 32 * 2**30)
    assert config.devices == {"nvidia.com/gpu": 2, "xilinx.com/fpga": 1}
    assert config.annotations == {"rack": "r1", "zone": "a"}
    assert (config.definition, config.metrics_port, config.heartbeat) == ("pool-a", 9105, 0.5)


def test_undeclared_capacity_is_detected():
    config = parse()
    assert (config.cpus, config.memory, config.devices) == (64, 256 * 2**30, {"nvidia.com/gpu": 8})


def test_the_token_comes_from_the_token_file_before_the_environment(tmp_path: Path):
    token_file = tmp_path / "token"
    token_file.write_text("from-file\n")
    assert parse("--token-file", str(token_file)).token == "from-file"
    assert parse().token == "tok"


@pytest.mark.parametrize(
    ("argv", "env", "message"),
    [
        (["--memory", "3XB"], ENV, "argument --memory: '3XB' is not a memory size"),
        (["--cpus", "0"], ENV, "argument --cpus: '0' is not a whole number of cpus"),
        (["--device", "nvidia.com/gpu"], ENV, "argument --device: 'nvidia.com/gpu' is not KEY=VALUE"),
        (["--heartbeat", "0s"], ENV, "argument --heartbeat: '0s' must be longer than zero"),
        (["--metrics-port", "70000"], ENV, "argument --metrics-port: '70000' is not a port"),
        (["--token-file", "/no/such/token"], ENV, "argument --token-file: cannot read /no/such/token"),
        ([], {}, "no token: pass --token-file PATH or set ROVING_TOKEN"),
    ],
)
def test_bad_arguments_name_the_option_and_the_reason(argv, env, message):
    with pytest.raises(UsageError, match="^" + message.replace("(", r"\(")):
        parse(*argv, env=env)


def test_agent_main_exits_2_with_one_line_on_bad_arguments(capsys, monkeypatch):
    monkeypatch.setenv("ROVING_TOKEN", "tok")
    assert agent_main(["--api", "http://127.0.0.1:1", "--memory", "3XB"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert err.startswith("roving agent: error: argument --memory: '3XB' is not a memory size")


def test_an_api_that_is_not_a_url_is_refused():
    with pytest.raises(UsageError, match="--api: 'localhost' is not an http"):
        parse_args(["--api", "localhost"], env=ENV, detect=lambda: DETECTED)


def test_a_run_spec_in_a_fuzzfiles_spellings_is_refused_naming_the_field():
    """The wire is typed (domain/agent_start.Start): "4GiB" is the Fuzzfile's, the control plane sends bytes."""
    with pytest.raises(msgspec.ValidationError, match=r"\$\.memory_bytes"):
        build_spec(wire(A1, memory_bytes="4GiB"))


def test_assignments_in_the_shape_the_api_sends_build_run_specs():
    spec = build_spec({
        "allocation_id": A1, "epoch": 2, "workflow_id": "wf", "stage": "job[3]", "job": "job", "task_id": 3,
        "kind": "task", "image": "", "script": None, "command": ["echo", "hi"], "args": None, "env": {}, "cwd": None,
        "files": {"/tmp/in.txt": "x"}, "execute_timeout_seconds": 30.0, "memory_bytes": 2**30, "cpu_cores": 2,
        "account_id": "acct", "readiness_probe": None, "ports": [{"name": "http", "port": 80, "protocol": "tcp"}],
        "mounts": {},
    })
    assert (spec.job, spec.task_id, spec.execute_timeout_seconds, spec.memory_bytes) == ("job", 3, 30.0, 2**30)
    assert msgspec.to_builtins(spec.ports) == [{"name": "http", "port": 80, "protocol": "tcp"}]


def test_an_assignment_without_its_epoch_is_rejected():
    with pytest.raises(Exception, match="epoch"):
        build_spec({"allocation_id": A1, "workflow_id": "wf", "stage": "s", "command": ["true"]})


def test_capacity_reads_meminfo_and_counts_nvidia_devices(tmp_path: Path):
    meminfo = tmp_path / "meminfo"
    meminfo.write_text("MemTotal:       16318540 kB\nMemFree:        1 kB\n")
    dev = tmp_path / "dev"
    dev.mkdir()
    for name in ("nvidia0", "nvidia1", "nvidiactl", "nvidia-uvm", "null"):
        (dev / name).touch()
    found = sysinfo.capacity(meminfo=meminfo, dev=dev)
    assert found.memory == 16318540 * 1024
    assert found.devices == {"nvidia.com/gpu": 2}
    assert found.cpu >= 1


def test_error_counters_sum_disk_io_errors_and_edac_memory_errors(tmp_path: Path):
    for disk, count in (("sda", "0x3"), ("sdb", "0x10")):
        (tmp_path / "block" / disk / "device").mkdir(parents=True)
        (tmp_path / "block" / disk / "device" / "ioerr_cnt").write_text(count + "\n")
    mc = tmp_path / "devices/system/edac/mc/mc0"
    mc.mkdir(parents=True)
    (mc / "ce_count").write_text("5\n")
    (mc / "ue_count").write_text("1\n")
    assert sysinfo.error_counters(tmp_path) == sysinfo.ErrorCounters(disk_errors=19, memory_errors=6)
    assert sysinfo.error_counters(tmp_path / "empty") == sysinfo.ErrorCounters(0, 0)


def test_a_root_agent_runs_jobs_as_nobody_by_default_and_never_as_root_unless_allowed():
    def as_root(*argv, env=ENV):
        return parse_args(["--api", "http://127.0.0.1:8080", *argv], env=env, detect=lambda: DETECTED, euid=0)

    assert as_root().workdir == Path("/var/lib/roving/work")

    user = as_root().job_user
    assert (user.name, user.uid) == ("nobody", 65534)
    with pytest.raises(UsageError, match="uid 0.*--allow-root-jobs"):
        as_root(env=ENV | {"ROVING_JOB_UID": "0"})
    assert as_root("--allow-root-jobs", env=ENV | {"ROVING_JOB_UID": "root", "ROVING_JOB_GID": "0"}).job_user.uid == 0
    assert as_root(env=ENV | {"ROVING_JOB_UID": "4242", "ROVING_JOB_GID": "4343"}).job_user.gid == 4343
    with pytest.raises(UsageError, match="no user 'no-such-user'"):
        as_root(env=ENV | {"ROVING_JOB_UID": "no-such-user"})


def test_an_agent_that_is_not_root_runs_jobs_as_itself():
    config = parse_args(["--api", "http://127.0.0.1:8080"], env=ENV, detect=lambda: DETECTED, euid=1000)
    assert config.job_user is None
    assert config.workdir == Path.home() / ".local/share/roving/work"


def test_a_work_directory_the_job_user_cannot_reach_is_refused(tmp_path):
    closed = tmp_path / "closed"
    closed.mkdir(mode=0o700)
    with pytest.raises(UsageError, match=r"uid 65534\) and cannot reach .*/closed/work: /.* is mode 0700"):
        parse_args(["--api", "http://127.0.0.1:8080", "--workdir", str(closed / "work")], env=ENV,
                   detect=lambda: DETECTED, euid=0)


def test_the_oci_runtime_names_the_packages_it_is_missing(monkeypatch):
    monkeypatch.setattr("api.agent.args.machine_has", lambda *programs: ["bwrap"])
    with pytest.raises(UsageError, match="--runtime oci needs bwrap on PATH: apt-get install bubblewrap"):
        parse("--runtime", "oci")
    with pytest.raises(UsageError, match="ROVING_RUNTIME: 'podman' is not one of host, oci"):
        parse(env=ENV | {"ROVING_RUNTIME": "podman"})
    monkeypatch.setattr("api.agent.args.machine_has", lambda *programs: [])
    config = parse(env=ENV | {"ROVING_RUNTIME": "oci", "ROVING_INSECURE_REGISTRIES": "reg.lan:5000, r2"})
    assert (config.runtime, config.insecure_registries) == ("oci", ("reg.lan:5000", "r2"))
    assert parse().runtime == "host"


def test_the_long_poll_wait_comes_from_the_flag_else_the_environment_else_ten_seconds():
    base = ["--node", "n", "--api", "http://x", "--cpus", "1", "--memory", "1GiB"]
    assert parse_args(base, env={"ROVING_TOKEN": "t"}).poll_wait == 10.0
    assert parse_args(base, env={"ROVING_TOKEN": "t", "ROVING_AGENT_POLL_WAIT": "0"}).poll_wait == 0.0
    assert parse_args([*base, "--poll-wait", "2s"], env={"ROVING_TOKEN": "t", "ROVING_AGENT_POLL_WAIT": "0"}).poll_wait == 2.0
    with pytest.raises(UsageError, match="ROVING_AGENT_POLL_WAIT"):
        parse_args(base, env={"ROVING_TOKEN": "t", "ROVING_AGENT_POLL_WAIT": "1m"})


def test_the_node_metrics_read_error_counters_under_the_given_sys_root(tmp_path: Path):
    from prometheus_client import generate_latest

    from api.agent.metrics import NodeMetrics

    (tmp_path / "block/sda/device").mkdir(parents=True)
    (tmp_path / "block/sda/device/ioerr_cnt").write_text("0x2\n")
    assert parse("--sys-root", str(tmp_path)).sys_root == tmp_path
    assert parse(env={**ENV, "ROVING_SYS_ROOT": str(tmp_path)}).sys_root == tmp_path
    assert parse().sys_root == Path("/sys")
    metrics = NodeMetrics(parse(env={**ENV, "ROVING_SYS_ROOT": str(tmp_path)}).sys_root)
    metrics.refresh(running=0)
    assert "roving_node_disk_errors 2.0" in generate_latest(metrics.registry).decode()
