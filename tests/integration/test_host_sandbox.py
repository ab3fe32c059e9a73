"""The host runtime's namespaces: volumes at the paths the Fuzzfile names, and, for an agent that runs jobs as its
own user (not root), the node's private paths and other processes out of the job's sight."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path
from types import SimpleNamespace

import pytest

from adapters.executor import Executor, JobUser, RunSpec, SpecError
from adapters.runspec import local_spec
from adapters.runtime.host import HostSandbox

REPO = Path(__file__).resolve().parents[2]
NOBODY = JobUser(uid=65534, gid=65534, name="nobody", groups=(65534,))
needs_bwrap = pytest.mark.skipif(shutil.which("bwrap") is None, reason="apt-get install bubblewrap")
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="runs jobs as nobody: needs root (CI runs as root)")


def run(executor: Executor, spec: RunSpec) -> tuple[tuple[int, str], bytes]:
    output: list[bytes] = []
    running = executor.start(spec, lambda stream, chunk: output.append(chunk), lambda *_: None)
    result = running.wait(30)
    running.release()
    return result, b"".join(output)


@pytest.fixture
def open_tmp():
    """A directory nobody (the jobs' user) can reach: pytest's own are under a 0700 parent."""
    path = Path(tempfile.mkdtemp(prefix="roving-sandbox-"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def node_dir():
    """A directory of the node outside /tmp (a job's /tmp is its own): where an admin's hidden paths are."""
    path = Path(tempfile.mkdtemp(prefix="roving-node-", dir="/var/lib"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


@needs_bwrap
@needs_root
def test_a_volume_is_read_at_its_mount_path_by_a_job_on_the_host_runtime(open_tmp):
    executor = Executor(open_tmp / "work", user=NOBODY, sandbox=HostSandbox.found())
    write = local_spec(allocation_id="a1", epoch=1, workflow_id="wf", stage="write", mounts={"/scratch": "v"},
                    script="echo kept > /scratch/data.txt")
    read = local_spec(allocation_id="a2", epoch=1, workflow_id="wf", stage="read", mounts={"/scratch": "v"},
                   script="cat /scratch/data.txt", cwd="/scratch")
    assert run(executor, write)[0][0] == 0
    (code, _), output = run(executor, read)
    assert (code, output) == (0, b"kept\n")


def test_a_mount_a_node_cannot_make_at_its_path_is_refused_saying_what_to_install(tmp_path):
    executor = Executor(tmp_path / "work", sandbox=None)
    spec = local_spec(allocation_id="a1", epoch=1, workflow_id="wf", stage="s", mounts={"/scratch": "v"}, script="true")
    with pytest.raises(SpecError, match=r"cannot mount volumes at their paths \(/scratch\): install bubblewrap"):
        executor.start(spec, lambda *_: None, lambda *_: None)


CONFINED = textwrap.dedent("""
    import sys
    from pathlib import Path
    sys.path.insert(0, sys.argv[1])
    from adapters.executor import Executor, RunSpec
    from adapters.runspec import local_spec
    from adapters.runtime.host import HostSandbox
    root, private = Path(sys.argv[2]), Path(sys.argv[3])
    executor = Executor(root / "work", sandbox=HostSandbox.found((private,)), confined=True)
    others = "for f in /proc/[0-9]*/cmdline; do tr '\\0' ' ' < $f; echo; done | grep -c 'adapters[.]executor'"
    script = f"cat {private}/admin.token; echo files:$(ls -A {private} | wc -l) agent:$({others})"
    spec = local_spec(allocation_id="a1", epoch=1, workflow_id="wf", stage="s", script=script)
    out = []
    running = executor.start(spec, lambda s, c: out.append(c), lambda *a: None)
    print(running.wait(30), b"".join(out).decode())
""")


@needs_bwrap
@needs_root
def test_an_agent_that_is_not_root_keeps_its_jobs_from_its_private_files_and_processes(open_tmp):
    """As a new user runs `make up`: the agent and its jobs share a uid, so only the namespace keeps the data
    directory (admin.token) and other processes (their command lines, their environments) out of a job's sight."""
    private = open_tmp / "data"
    private.mkdir(mode=0o700)
    (private / "admin.token").write_text("the-admin-token")
    os.chown(private, 65534, 65534)
    os.chown(private / "admin.token", 65534, 65534)
    (open_tmp / "work").mkdir()
    os.chown(open_tmp / "work", 65534, 65534)
    done = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", sys.executable, "-c",
                           CONFINED, str(REPO), str(open_tmp), str(private)],
                          capture_output=True, text=True, timeout=60, cwd=open_tmp)
    assert "the-admin-token" not in done.stdout + done.stderr, done.stdout
    assert "files:0" in done.stdout, done.stdout + done.stderr
    assert "agent:0" in done.stdout, done.stdout  # the agent (and its command line, its environment) out of sight


@needs_bwrap
@needs_root
def test_a_root_job_has_no_capability_in_its_sandbox_and_never_sees_a_hidden_path(open_tmp, node_dir):
    """--allow-root-jobs: bubblewrap started as root kept every capability (a job could mount over or remount the
    read-only node) and a hidden path was left to permissions root's job bypasses."""
    hidden = node_dir / "hidden"
    hidden.mkdir(mode=0o700)
    (hidden / "secret").write_text("the-secret")
    root = JobUser(uid=0, gid=0, name="root")
    executor = Executor(open_tmp / "work", user=root, allow_root=True, sandbox=HostSandbox.found((hidden,)))
    script = (f"cat {hidden}/secret; mount -t tmpfs none /mnt 2>/dev/null && echo mounted; "
              "grep CapEff /proc/self/status")
    (code, _), output = run(executor, local_spec(allocation_id="a1", epoch=1, workflow_id="wf", stage="s", script=script))
    assert b"the-secret" not in output and b"mounted" not in output, output
    assert b"CapEff:\t0000000000000000" in output, output


@needs_bwrap
@needs_root
def test_a_path_the_admin_hides_is_covered_for_a_root_agents_jobs_whenever_their_uid_can_reach_it(open_tmp, node_dir):
    """--hide under a root agent was left to permissions: a world-readable hidden path stayed readable to every job;
    a hidden path the job's uid cannot get to stays as it is (bubblewrap could not make its mount point)."""
    shown, closed = node_dir / "shown", node_dir / "closed"
    shown.mkdir(mode=0o755)
    (shown / "notes").write_text("the-notes")
    (shown / "notes").chmod(0o644)
    (closed / "inner").mkdir(parents=True)
    closed.chmod(0o700)
    executor = Executor(open_tmp / "work", user=NOBODY, sandbox=HostSandbox.found((shown, closed / "inner")))
    script = f"cat {shown}/notes; echo listed:$(ls -A {shown} | wc -l)"
    (code, _), output = run(executor, local_spec(allocation_id="a1", epoch=1, workflow_id="wf", stage="s", script=script))
    assert b"the-notes" not in output and b"listed:0" in output, output
    assert code == 0, output


class Said:
    """The agent's log: what it warned of at start."""

    def __init__(self) -> None:
        self.warnings: list[tuple[str, dict]] = []

    def warning(self, event: str, **fields) -> None:
        self.warnings.append((event, fields))

    def info(self, event: str, **fields) -> None:
        pass


@needs_bwrap
@needs_root
def test_a_root_agent_whose_bubblewrap_runs_only_for_root_says_so_and_still_runs_its_jobs(open_tmp, monkeypatch):
    """Where unprivileged user namespaces are off, bwrap runs as root (the agent) but not as a job's uid: the agent
    once tried it as root, then wrapped every job in it, and every host job failed to start."""
    from api.agent.args import parse_args
    from api.agent.node import build_executor

    fake = open_tmp / "bin"
    fake.mkdir(mode=0o755)
    (fake / "bwrap").write_text(f'#!/bin/sh\n[ "$(id -u)" = 0 ] || {{ echo "bwrap: No permissions to create new '
                                f'namespace" >&2; exit 1; }}\nexec {shutil.which("bwrap")} "$@"\n')
    (fake / "bwrap").chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake}:{os.environ['PATH']}")
    config = parse_args(["--node", "n1", "--api", "http://127.0.0.1:1", "--workdir", str(open_tmp / "work")],
                        env={"ROVING_TOKEN": "t"}, detect=lambda: SimpleNamespace(cpu=1, memory=2**30, devices={}),
                        euid=0)
    said = Said()
    executor = build_executor(config, said, detect=lambda name: (None, "none"))
    (code, _), output = run(executor, local_spec(allocation_id="a1", epoch=1, workflow_id="wf", stage="s",
                                              script="echo ran as $(id -u)"))
    assert (code, output) == (0, b"ran as 65534\n")
    [(event, fields)] = [warning for warning in said.warnings if warning[0] == "agent.no_sandbox"]
    assert "as the jobs' user nobody (uid 65534): bwrap: No permissions" in fields["reason"]
    assert config.annotations["roving.io/sandbox"] == "none"
    volume = local_spec(allocation_id="a2", epoch=1, workflow_id="wf", stage="v", mounts={"/scratch": "v"}, script="true")
    with pytest.raises(SpecError, match="cannot mount volumes at their paths .*uid 65534.*user namespaces"):
        executor.start(volume, lambda *_: None, lambda *_: None)


CONNECT = ("for s in {sockets}; do /usr/bin/python3 -c 'import socket, sys; socket.socket(socket.AF_UNIX)"
           ".connect(sys.argv[1])' $s 2>/dev/null && echo connected:$s; done; cat {resolv} >/dev/null && echo resolver")


@needs_bwrap
@needs_root
def test_a_job_connects_to_no_socket_of_the_node_and_still_reads_its_resolver_file(open_tmp, node_dir, monkeypatch):
    """A read-only mount does not stop connect(): a job reached sockets under /run (a user's session bus, docker's)
    and the agent's ssh agent. /run is empty in the sandbox but for the file /etc/resolv.conf points to there and the
    name service's sockets (nscd, nslcd)."""
    import socket

    import adapters.runtime.host as host

    run_dir = Path(tempfile.mkdtemp(prefix="roving-run-", dir="/run"))
    try:
        run_dir.chmod(0o755)
        stub = run_dir / "stub-resolv.conf"
        stub.write_text("nameserver 127.0.0.53\n")
        (open_tmp / "resolv.conf").symlink_to(stub)  # as systemd-resolved links /etc/resolv.conf
        monkeypatch.setattr(host, "RESOLV", open_tmp / "resolv.conf")
        (node_dir / "ssh").mkdir(mode=0o755)
        paths = [run_dir / "docker.sock", node_dir / "ssh" / "agent.sock", run_dir / "nscd.sock"]
        monkeypatch.setattr(host, "NAME_SERVICE", (str(paths[2]),))  # user names from a directory: still answers
        listening = [socket.socket(socket.AF_UNIX) for _ in paths]
        for server, path in zip(listening, paths, strict=True):
            server.bind(str(path))
            server.listen()
            path.chmod(0o777)
        hidden = host.agent_sockets({"SSH_AUTH_SOCK": str(paths[1])})
        executor = Executor(open_tmp / "work", user=NOBODY, sandbox=HostSandbox.found(hidden))
        script = CONNECT.format(sockets=" ".join(map(str, paths)), resolv=stub)
        (code, _), output = run(executor, local_spec(allocation_id="a1", epoch=1, workflow_id="wf", stage="s",
                                                  script=script))
        assert output == f"connected:{paths[2]}\nresolver\n".encode(), output
        for server in listening:
            server.close()
    finally:
        shutil.rmtree(run_dir, ignore_errors=True)


@needs_bwrap
@needs_root
def test_a_stack_installed_under_tmp_is_still_there_read_only_for_its_jobs_and_its_data_dir_still_hidden(
        open_tmp, monkeypatch):
    """A clone in /tmp (CI's may be) runs `roving` and its Python in its jobs, though a job's /tmp is its own: the
    installation is bound back read-only, and the data directory inside it stays covered."""
    import adapters.runtime.host as host

    checkout = open_tmp / "checkout"
    (checkout / "api").mkdir(parents=True)
    (checkout / "api" / "cli.py").write_text("print('the roving CLI')\n")
    (checkout / ".roving").mkdir()
    (checkout / ".roving" / "admin.token").write_text("rv1.secret")
    for path in (checkout, checkout / "api", checkout / ".roving"):
        path.chmod(0o755)
    (checkout / ".roving" / "admin.token").chmod(0o644)
    monkeypatch.setattr(host, "SOURCE", checkout)
    executor = Executor(open_tmp / "work", user=NOBODY,
                        sandbox=HostSandbox.found(hidden=(checkout / ".roving",), user=NOBODY), confined=True)
    spec = local_spec(allocation_id="a1", epoch=1, workflow_id="wf", stage="cli",
                   script=f"cat {checkout}/api/cli.py; cat {checkout}/.roving/admin.token; "
                          f"touch {checkout}/planted 2>/dev/null && echo planted; echo end")
    (code, _), output = run(executor, spec)
    assert code == 0, output
    assert b"the roving CLI" in output and b"rv1.secret" not in output and b"planted\n" not in output, output
    assert not (checkout / "planted").exists()
