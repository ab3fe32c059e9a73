"""The executor against real processes: scripts, commands, env, files, cwd, timeouts, cancel, streaming."""

from __future__ import annotations

import resource
import threading
import time
from pathlib import Path

import pytest

from adapters.executor import Executor, RunSpec, SpecError
from adapters.runspec import local_spec
from adapters.runtime.host import HostSandbox


class Recorder:
    """Collects what the executor streams and the single exit it reports."""

    def __init__(self) -> None:
        self.chunks: list[tuple[str, bytes]] = []
        self.exits: list[tuple[int, str]] = []
        self.first_output = threading.Event()

    def output(self, stream: str, chunk: bytes) -> None:
        self.chunks.append((stream, chunk))
        self.first_output.set()

    def exit(self, code: int, reason: str) -> None:
        self.exits.append((code, reason))

    def text(self, stream: str = "stdout") -> str:
        return b"".join(c for s, c in self.chunks if s == stream).decode()


def is_gone(pid: int) -> bool:
    """Exited: no process, or a zombie an init that does not reap still lists."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] == "Z"


def spec(**fields) -> RunSpec:
    base = {"allocation_id": "alloc-1", "epoch": 3, "workflow_id": "wf-1", "stage": "train", "account_id": "acct-1"}
    return local_spec(**(base | fields))


def run(executor: Executor, run_spec: RunSpec, timeout: float = 10) -> tuple[Recorder, tuple[int, str]]:
    recorder = Recorder()
    running = executor.start(run_spec, recorder.output, recorder.exit)
    result = running.wait(timeout)
    assert result is not None, "the process did not finish in time"
    return recorder, result


def mounting_sandbox() -> HostSandbox:
    """The host runtime's namespaces, which a stage that mounts volumes needs; the test skips without them."""
    sandbox = HostSandbox.found()
    if sandbox is None:
        pytest.skip("mounting volumes at their paths needs bubblewrap that runs here (apt-get install bubblewrap)")
    return sandbox


@pytest.fixture
def executor(tmp_path: Path) -> Executor:
    return Executor(tmp_path / "work", kill_grace=0.3)


def test_a_script_without_a_shebang_runs_under_bin_sh_and_reports_its_exit_code(executor):
    recorder, result = run(executor, spec(script='echo "shell: $0"\nexit 3'))
    assert result == (3, "exited with code 3")
    assert recorder.exits == [result]
    assert recorder.text().startswith("shell: ")
    script = executor.workdir(spec()) / ".roving-script"
    assert script.read_text().startswith("#!/bin/sh\n")


def test_a_script_with_its_own_shebang_keeps_it(executor):
    recorder, result = run(executor, spec(script="#!/usr/bin/env python3\nprint(6 * 7)"))
    assert result == (0, "exited with code 0")
    assert recorder.text() == "42\n"


def test_a_command_and_its_args_run_without_a_shell(executor):
    recorder, result = run(executor, spec(command=["echo"], args=["a; touch pwned", "$HOME"]))
    assert result[0] == 0
    assert recorder.text() == "a; touch pwned $HOME\n"
    assert not (executor.workdir(spec()) / "pwned").exists()


def test_the_job_sees_its_env_and_the_fb_variables_but_not_the_agents_token(executor, monkeypatch):
    monkeypatch.setenv("ROVING_TOKEN", "secret")
    task = spec(stage="job[3]", job="job", task_id=3, env={"GREETING": "hi"},
                script="echo $GREETING $FB_WORKFLOW_ID $FB_JOB_NAME $FB_TASK_ID $FB_ACCOUNT_ID ${ROVING_TOKEN:-none}")
    recorder, _ = run(executor, task)
    assert recorder.text() == "hi wf-1 job 3 acct-1 none\n"


def test_a_job_that_is_not_a_task_has_no_task_id(executor):
    recorder, _ = run(executor, spec(script="echo ${FB_TASK_ID:-unset}"))
    assert recorder.text() == "unset\n"


def test_files_are_written_before_start_and_a_relative_cwd_resolves_inside_the_work_directory(executor):
    job = spec(files={"conf/app.ini": "threads=4\n"}, cwd="run", script="pwd; cat ../conf/app.ini")
    recorder, result = run(executor, job)
    workdir = executor.workdir(job)
    assert workdir == executor.workdir_root / "wf-1" / "train-1"
    assert result[0] == 0
    assert recorder.text() == f"{workdir / 'run'}\nthreads=4\n"


def test_an_absolute_file_path_is_written_inside_the_work_directory(executor):
    job = spec(files={"/etc/roving-test.conf": "x"}, command=["cat", "etc/roving-test.conf"])
    recorder, result = run(executor, job)
    assert result[0] == 0 and recorder.text() == "x"
    assert not Path("/etc/roving-test.conf").exists()


def test_a_cwd_or_file_leaving_the_work_directory_is_refused(executor):
    with pytest.raises(SpecError, match="leaves the stage's work directory"):
        executor.start(spec(cwd="../../elsewhere", command=["true"]), Recorder().output, Recorder().exit)
    with pytest.raises(SpecError, match="leaves"):
        executor.start(spec(files={"../x": "y"}, command=["true"]), Recorder().output, Recorder().exit)


def test_a_stage_without_script_or_command_is_refused(executor):
    with pytest.raises(SpecError, match="neither a script nor a command"):
        executor.start(spec(), Recorder().output, Recorder().exit)


def test_the_execute_timeout_terms_then_kills_a_process_that_ignores_term(executor):
    started = time.monotonic()
    recorder, result = run(executor, spec(script="trap 'echo got TERM' TERM\nwhile true; do sleep 0.05; done",
                                          execute_timeout_seconds=0.5))
    assert result == (137, "execute timeout of 0.5s reached")
    assert "got TERM" in recorder.text()
    assert 0.7 <= time.monotonic() - started < 5


def test_cancel_terms_the_whole_process_group_and_keeps_the_reason(executor, tmp_path):
    recorder = Recorder()
    running = executor.start(spec(script="sleep 30 &\necho $! > child.pid\necho up\nwait"), recorder.output, recorder.exit)
    assert recorder.first_output.wait(5)
    child = int((executor.workdir(spec()) / "child.pid").read_text())
    running.cancel("canceled by alice")
    assert running.wait(5) == (143, "canceled by alice")
    assert is_gone(child)


def test_a_process_killed_by_a_signal_exits_with_128_plus_the_signal(executor):
    _, result = run(executor, spec(script="kill -KILL $$"))
    assert result == (137, "killed by signal SIGKILL")


def test_output_is_streamed_while_the_process_still_runs(executor):
    recorder = Recorder()
    running = executor.start(spec(script="echo early; echo oops >&2; sleep 30"), recorder.output, recorder.exit)
    assert recorder.first_output.wait(5)
    deadline = time.monotonic() + 5
    while ("oops" not in recorder.text("stderr") or "early" not in recorder.text()) and time.monotonic() < deadline:
        time.sleep(0.02)  # stdout and stderr are read by separate threads: either may arrive first
    assert recorder.text() == "early\n" and recorder.text("stderr") == "oops\n"
    assert recorder.exits == []
    running.evict()
    assert running.wait(5) == (143, "evicted from node")


def test_the_memory_request_becomes_the_memlock_limit(executor):
    _, hard = resource.getrlimit(resource.RLIMIT_MEMLOCK)
    requested = 4 * 1024 * 1024
    expected = requested if hard == resource.RLIM_INFINITY else min(requested, hard)
    recorder, _ = run(executor, spec(script="ulimit -l", memory_bytes=requested))
    assert recorder.text() == f"{expected // 1024}\n"


def test_a_missing_command_fails_to_start(executor):
    with pytest.raises(FileNotFoundError):
        executor.start(spec(command=["/no/such/program"]), Recorder().output, Recorder().exit)


def test_an_image_is_not_used_by_the_host_executor_and_it_says_so(tmp_path):
    executor = Executor(tmp_path, kill_grace=0.3)
    recorder = Recorder()
    running = executor.start(spec(image="docker://alpine:3.20", command=["true"]), recorder.output, recorder.exit)
    assert running.wait(5) == (0, "exited with code 0")
    assert running.ran_on_host
    plain = executor.start(spec(allocation_id="alloc-2", command=["true"]), recorder.output, recorder.exit)
    assert plain.wait(5) == (0, "exited with code 0") and not plain.ran_on_host


def test_a_multinode_rank_finds_its_hostfile_and_rank_in_its_work_directory(executor: Executor):
    from domain.multinode import Peers
    peers = Peers(rank=1, hosts=("10.0.0.1", "10.0.0.2"), port=29600, implementation="openmpi")
    recorder, (code, _) = run(executor, spec(script='echo "$FB_NODE_RANK/$FB_NNODES $MASTER_ADDR"; cat "$FB_HOSTFILE"',
                                             peers=peers))
    assert code == 0
    assert recorder.text() == "1/2 10.0.0.1\n10.0.0.1 slots=1\n10.0.0.2 slots=1\n"
