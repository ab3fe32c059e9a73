"""Host jobs reach only their own work directory, their volumes and a private /tmp, in a pid namespace of their own,
whoever runs the agent: as root (each tenant under its own uid) and as a normal user (every job under that user's
uid, where only the sandbox stands between a job and the stack's checkout, venv and home, and the other jobs).

The agent's side runs in a child process, as root or as a normal user this test makes (`useradd`) when it runs as
root; run as a normal user itself, the test is that user."""

from __future__ import annotations

import json
import os
import pwd
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import textwrap
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
STACK_USER = "roving-stack"
needs_bwrap = pytest.mark.skipif(shutil.which("bwrap") is None, reason="apt-get install bubblewrap")

# Two tenants' jobs on one agent: bob's keeps running (its private file and its script in its directory) while
# alice's tries everything it must not do, and what it must still do; the outcome is printed as JSON.
AGENT = textwrap.dedent("""
    import json, sys
    from pathlib import Path
    sys.path.insert(0, sys.argv[1])
    from adapters.executor import Executor, JobUser, RunSpec
    from adapters.runspec import local_spec
    from domain.fuzzfile.stages import Hook
    from adapters.runtime.host import HostSandbox
    root, targets, as_root = Path(sys.argv[2]), json.loads(sys.argv[3]), sys.argv[4] == "root"
    data = root / "data"
    executor = Executor(root / "work", sandbox=HostSandbox.found((data,)), confined=not as_root,
                        user=JobUser(65534, 65534, "nobody") if as_root else None)
    ids = (lambda uid: {"uid": uid, "gid": 65534}) if as_root else (lambda uid: {})
    bob = local_spec(allocation_id="b1", epoch=1, workflow_id="bob-wf", stage="s", owner_id="bob",
                  script="echo pids:$(ls /proc | grep -c '^[0-9]') > pids.txt; echo bob-secret > private.txt; sleep 30",
                  **ids(65533))
    bob_dir = executor.workdir(bob)
    tries = {"read": f"cat {bob_dir}/private.txt", "append": f"echo evil >> {bob_dir}/.roving-script",
             "see": f"test -e {bob_dir}", "list": f"ls {root / 'work'} | grep -q bob-wf",
             **{name: f"touch {path}" for name, path in targets.items()},
             "workdir": "echo mine > mine.txt", "volume": "echo kept > /scratch/kept.txt", "tmp": "touch /tmp/t"}
    script = "".join(f"if {{ {line}; }} 2>/dev/null; then echo {name}:yes; else echo {name}:no; fi\\n"
                     for name, line in tries.items())
    hooks = [Hook("pre", "job", "echo pre-hook-ran", 5), Hook("post", "job", "echo post-hook-ran >> mine.txt", 5)]
    alice = local_spec(allocation_id="a1", epoch=1, workflow_id="alice-wf", stage="s", owner_id="alice", script=script,
                    mounts={"/scratch": "v"}, hooks=hooks, **ids(65534))
    out, ended = [], []
    bobs = executor.start(bob, lambda s, c: None, lambda *a: None)
    for _ in range(100):
        if (bob_dir / "private.txt").exists():
            break
        __import__("time").sleep(0.1)
    running = executor.start(alice, lambda s, c: out.append(c), lambda *a: ended.append(a))
    code = running.wait(30)
    for _ in range(100):  # reported once the post hook has run
        if ended:
            break
        __import__("time").sleep(0.1)
    bobs.cancel("done"); bobs.wait(30)
    print(json.dumps({"code": code[0], "output": b"".join(out).decode(), "ended": [list(e) for e in ended],
                      "alice": str(executor.workdir(alice)), "bob": str(bob_dir),
                      "volume": str(executor.volumes.path("alice-wf", "v"))}))
""")


def readable_python() -> tuple[str, str] | None:
    """An interpreter a normal user can run, of this one's version, and the PYTHONPATH that imports this checkout
    and its venv's packages (the test's own interpreter may sit under /root, closed to others)."""
    for python in ("/usr/bin/python3", sys.executable):
        # it starts itself again, as the stack starts its agents (an exec straight from setpriv proved nothing here)
        probe = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", python, "-c",
                 "import subprocess, sys; subprocess.run([sys.executable, '-c', ''], check=True); "
                 "print(sys.version_info[:2])"]
        try:
            done = subprocess.run(probe, capture_output=True, text=True, timeout=30)
        except OSError:
            continue
        if done.returncode == 0 and done.stdout.strip() == str(tuple(sys.version_info[:2])):
            return python, os.pathsep.join((str(REPO), sysconfig.get_paths()["purelib"]))
    return None


def stack_user() -> pwd.struct_passwd:
    """The normal user a stack is started by: made here (with its home) when this machine has none."""
    try:
        return pwd.getpwnam(STACK_USER)
    except KeyError:
        if shutil.which("useradd") is None:
            pytest.skip("no useradd to make a normal user for the stack")
        made = subprocess.run(["useradd", "--create-home", "--shell", "/bin/sh", STACK_USER], capture_output=True,
                              text=True, timeout=30)
    try:  # another test worker may have made it meanwhile (useradd then says it exists)
        return pwd.getpwnam(STACK_USER)
    except KeyError:
        pytest.skip(f"useradd could not make the stack's user: {made.stderr.strip()}")


def run_agent(as_root: bool) -> tuple[dict, dict[str, Path]]:
    """The two tenants' jobs on an agent run as root, or as a normal user; the outcome and the stack's paths a job
    tried to create a file in (its checkout, its venv's site-packages, the user's home)."""
    if as_root:
        user, command, env = None, [sys.executable], dict(os.environ)
    elif os.geteuid() == 0:
        user, found = stack_user(), readable_python()
        if found is None:
            pytest.skip("no python a normal user can run, of this version")
        command = ["setpriv", f"--reuid={user.pw_uid}", f"--regid={user.pw_gid}", "--init-groups", found[0]]
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": user.pw_dir, "PYTHONPATH": found[1]}
    else:
        user, command, env = pwd.getpwuid(os.geteuid()), [sys.executable], dict(os.environ)
    base = Path(tempfile.mkdtemp(prefix="roving-isolation-", dir=user.pw_dir if user else None))
    base.chmod(0o755)
    targets = {"checkout": base / "checkout" / "planted", "venv": base / "venv" / "site-packages" / "planted.pth",
               "home": Path(user.pw_dir if user else "/root") / f"planted-{base.name}"}
    for target in targets.values():
        target.parent.mkdir(parents=True, exist_ok=True)
    if user is not None and os.geteuid() == 0:
        for top, _, _ in os.walk(base):
            os.chown(top, user.pw_uid, user.pw_gid)
    try:
        done = subprocess.run([*command, "-c", AGENT, str(REPO), str(base),
                               json.dumps({k: str(v) for k, v in targets.items()}), "root" if as_root else "user"],
                              capture_output=True, text=True, timeout=120, env=env, cwd=base)
        assert done.returncode == 0, done.stderr[-3000:]
        outcome = json.loads(done.stdout.splitlines()[-1])
        outcome["planted"] = {name: path.exists() for name, path in targets.items()}
        outcome["bob_script"] = (Path(outcome["bob"]) / ".roving-script").read_text()
        outcome["mine"] = (Path(outcome["alice"]) / "mine.txt").read_text()
        outcome["kept"] = (Path(outcome["volume"]) / "kept.txt").read_text()
        outcome["pids"] = (Path(outcome["bob"]) / "pids.txt").read_text()
        return outcome, targets
    finally:
        for target in targets.values():
            target.unlink(missing_ok=True)
        shutil.rmtree(base, ignore_errors=True)


def said(outcome: dict) -> dict[str, str]:
    return dict(line.split(":", 1) for line in outcome["output"].splitlines() if ":" in line and " " not in line)


@pytest.fixture(scope="module")
def as_normal_user():
    if os.geteuid() == 0 and shutil.which("setpriv") is None:
        pytest.skip("no setpriv to run the agent as a normal user")
    return run_agent(as_root=False)


@pytest.fixture(scope="module")
def as_root():
    if os.geteuid() != 0:
        pytest.skip("jobs run as their owners' uids only under a root agent (CI runs as root)")
    return run_agent(as_root=True)


@needs_bwrap
def test_a_job_on_a_normal_users_stack_cannot_create_a_file_in_its_checkout_venv_or_home(as_normal_user):
    outcome, _ = as_normal_user
    assert outcome["planted"] == {"checkout": False, "venv": False, "home": False}, outcome["output"]
    assert {k: said(outcome)[k] for k in ("checkout", "venv", "home")} == {"checkout": "no", "venv": "no", "home": "no"}


@needs_bwrap
@pytest.mark.parametrize("agent", ["as_normal_user", "as_root"])
def test_a_job_can_neither_read_nor_append_to_nor_even_see_another_jobs_directory(agent, request):
    outcome, _ = request.getfixturevalue(agent)
    tried = said(outcome)
    assert {k: tried[k] for k in ("read", "append", "see", "list")} == dict.fromkeys(("read", "append", "see", "list"),
                                                                                      "no"), outcome["output"]
    assert "bob-secret" not in outcome["output"] and "evil" not in outcome["bob_script"]


@needs_bwrap
@pytest.mark.parametrize("agent", ["as_normal_user", "as_root"])
def test_a_sandboxed_job_still_writes_its_directory_volume_and_tmp_and_runs_its_hooks_with_its_exit_recorded(
        agent, request):
    outcome, _ = request.getfixturevalue(agent)
    tried = said(outcome)
    assert {k: tried[k] for k in ("workdir", "volume", "tmp")} == dict.fromkeys(("workdir", "volume", "tmp"), "yes")
    assert outcome["kept"] == "kept\n" and outcome["mine"] == "mine\npost-hook-ran\n"
    assert "[roving pre-hook] pre-hook-ran" in outcome["output"]
    assert outcome["code"] == 0 and outcome["ended"] and outcome["ended"][0][0] == 0


@needs_bwrap
def test_a_host_job_of_a_root_agent_lists_only_its_own_processes(as_root):
    outcome, _ = as_root  # bob's job: no volumes, nothing but the host runtime
    pids = int(outcome["pids"].removeprefix("pids:"))
    assert 0 < pids <= 6, outcome["pids"]  # bubblewrap's init, the job's shells, ls and grep: not the node's


@needs_bwrap
def test_a_path_the_admin_makes_writable_is_writable_and_never_brings_back_the_other_jobs_directories():
    from adapters.executor import Executor, JobUser
    from adapters.runspec import local_spec
    from adapters.runtime.host import HostSandbox

    shared = Path(tempfile.mkdtemp(prefix="roving-writable-"))
    try:
        shared.chmod(0o777)  # a shared filesystem: the job's uid (nobody under a root agent) may write it
        user = JobUser(65534, 65534, "nobody") if os.geteuid() == 0 else None
        executor = Executor(shared / "work", user=user, sandbox=HostSandbox.found(writable=(shared,)),
                            confined=user is None)
        other = executor.workdir(local_spec(allocation_id="o1", epoch=1, workflow_id="other", stage="s"))
        other.mkdir(parents=True)
        spec = local_spec(allocation_id="a1", epoch=1, workflow_id="wf", stage="s",
                       script=f"touch {shared}/result && echo wrote; test -e {other} && echo saw-other; touch /usr/x")
        output: list[bytes] = []
        running = executor.start(spec, lambda stream, chunk: output.append(chunk), lambda *_: None)
        code, _ = running.wait(30)
        running.release()
        assert (shared / "result").exists() and b"wrote" in b"".join(output)
        assert b"saw-other" not in b"".join(output)
        assert not Path("/usr/x").exists() and code != 0  # the rest of the node stays read-only
    finally:
        shutil.rmtree(shared, ignore_errors=True)


def test_an_agent_is_told_the_node_paths_its_jobs_may_write_by_flag_and_environment(tmp_path):
    from api.agent.args import parse_args

    config = parse_args(["--node", "n1", "--api", "http://127.0.0.1:1", "--workdir", str(tmp_path),
                         "--writable", "/scratch"], env={"ROVING_TOKEN": "t", "ROVING_AGENT_WRITABLE": "/lustre:/gpfs"},
                         euid=1000)
    assert config.writable == (Path("/scratch"), Path("/lustre"), Path("/gpfs"))


@needs_bwrap
def test_a_post_hook_runs_in_its_jobs_sandbox_even_when_the_job_works_in_a_volume(tmp_path):
    from adapters.executor import Executor
    from adapters.runspec import local_spec
    from adapters.runtime.host import HostSandbox
    from domain.fuzzfile.stages import Hook

    executor = Executor(tmp_path / "work", sandbox=HostSandbox.found())
    hook = Hook("post", "job", "echo after $ROVING_EXIT_CODE > hooked; ls /proc | grep -c '^[0-9]' >> hooked", 5)
    spec = local_spec(allocation_id="a1", epoch=1, workflow_id="wf", stage="s", mounts={"/scratch": "v"},
                   cwd="/scratch", script="echo job > made", hooks=[hook])
    ended: list[tuple[int, str]] = []
    running = executor.start(spec, lambda *_: None, lambda code, reason: ended.append((code, reason)))
    running.wait(30)
    deadline = time.monotonic() + 10
    while not ended and time.monotonic() < deadline:
        time.sleep(0.05)
    volume = executor.volumes.path("wf", "v")
    assert (volume / "made").read_text() == "job\n" and ended[:1] == [(0, "exited with code 0")]
    said, pids = (volume / "hooked").read_text().splitlines()
    assert said == "after 0" and int(pids) <= 6  # in the job's volume, in a pid namespace of its own


def test_an_agent_started_by_a_normal_user_runs_no_one_elses_work_unless_told_whose_or_that_any_owners_may():
    """Its jobs share its uid, where tenants reach each other's files, processes and sockets: a hand-started agent
    (not `roving up`'s pool, which names its admin) ran every tenant's work."""
    from api.agent.args import UsageError, check_tenancy, parse_args

    if os.geteuid() == 0:
        user, found = stack_user(), readable_python()
        if found is None or shutil.which("setpriv") is None:
            pytest.skip("no setpriv, or no python a normal user can run, of this version")
        command = ["setpriv", f"--reuid={user.pw_uid}", f"--regid={user.pw_gid}", "--init-groups", found[0]]
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": user.pw_dir, "PYTHONPATH": found[1]}
    else:
        command, env = [sys.executable], dict(os.environ)
    start = "import sys; from api.agent.main import agent_main; sys.exit(agent_main(sys.argv[1:]))"
    done = subprocess.run([*command, "-c", start, "--node", "n1", "--api", "http://127.0.0.1:1", "--workdir",
                           "/tmp/roving-unstarted"], env={**env, "ROVING_TOKEN": "t"}, capture_output=True, text=True,
                          timeout=60, cwd="/")
    assert done.returncode == 2, done.stderr[-2000:]
    assert "pass --only-owner USER_ID" in done.stderr and "or --any-owner" in done.stderr
    told = ["--node", "n1", "--api", "http://127.0.0.1:1", "--workdir", "/tmp/roving-unstarted"]
    for argv, environment in ((["--only-owner", "u1"], {}), (["--any-owner"], {}), ([], {"ROVING_AGENT_ANY_OWNER": "1"})):
        check_tenancy(parse_args(told + argv, env={"ROVING_TOKEN": "t", **environment}, euid=1000), 1000)
    with pytest.raises(UsageError):
        check_tenancy(parse_args(told, env={"ROVING_TOKEN": "t"}, euid=1000), 1000)
