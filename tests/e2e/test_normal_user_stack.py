"""`roving up` started by a normal user, as `make up` runs it: its own checkout and venv, its home, its data
directory. The admin's job cannot create a file in any of them and still writes its own directory; a second
tenant's job is refused with the reason (every job here would run under this one user's uid).

Run as root (CI), the test makes that user (`useradd`) and builds its venv from Debian's python3 (the test's own
interpreter may be under /root, closed to others): the checkout is a copy of this one's packages the user owns, the
venv's .pth adds this venv's site-packages for the dependencies."""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

import httpx
import pytest

from adapters.nats_server import find_binary
from tests.e2e.stack import UP, LocalStack
from tests.e2e.test_agent_bus import work_requests
from tests.e2e.test_retention_stack import archived
from tests.integration.test_job_isolation import readable_python, stack_user

REPO = Path(__file__).resolve().parents[2]
PACKAGES = ("adapters", "api", "domain", "ops", "projections", "roving")  # pyproject.toml's packages
PASSWORD = "Blue-Kettle-42-Moon"
pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="apt-get install bubblewrap (the jobs' sandbox)")
PROBE = """version: v4
jobs:
  probe:
    image: {{uri: docker://alpine:3.20}}
    script: |
      for target in {targets}; do
        if touch "$target" 2>/dev/null; then echo "created $target"; else echo "refused $target"; fi
      done
      echo mine > mine.txt && echo "own directory written"
    resource: {{cpu: {{cores: 1}}, memory: {{size: 64MiB}}}}
"""
HELLO = """version: v4
jobs:
  hello:
    image: {uri: docker://alpine:3.20}
    script: echo hello
    resource: {cpu: {cores: 1}, memory: {size: 64MiB}}
"""


def as_user(user: pwd.struct_passwd, *argv: str) -> list[str]:
    if os.geteuid() != 0:
        return list(argv)
    return ["setpriv", f"--reuid={user.pw_uid}", f"--regid={user.pw_gid}", "--init-groups", *argv]


def own_install(user: pwd.struct_passwd, base: Path) -> Path:
    """The user's checkout (this one's packages) and venv (Debian's python3, this venv's packages added by a .pth):
    the venv's python."""
    checkout, venv = base / "checkout", base / "checkout" / ".venv"
    checkout.mkdir(parents=True)
    for package in PACKAGES:
        shutil.copytree(REPO / package, checkout / package, ignore=shutil.ignore_patterns("__pycache__"))
    found = readable_python() if os.geteuid() == 0 else (sys.executable, "")
    if found is None:
        pytest.skip("no python a normal user can run, of this version")
    subprocess.run([found[0], "-m", "venv", "--without-pip", str(venv)], check=True, timeout=60)
    site = next(venv.glob("lib/python3*/site-packages"))
    # the checkout first, then where this interpreter finds the dependencies (never this checkout itself)
    found_on = [p for p in (sysconfig.get_paths()["purelib"], *sys.path) if p and Path(p).is_dir()
                and Path(p).resolve() != REPO]
    (site / "roving-checkout.pth").write_text("\n".join([str(checkout), *dict.fromkeys(found_on)]) + "\n")
    if os.geteuid() == 0:
        subprocess.run(["chown", "-R", f"{user.pw_uid}:{user.pw_gid}", str(base)], check=True, timeout=60)
    return venv / "bin" / "python"


@pytest.fixture(scope="module")
def normal_stack():
    user = stack_user() if os.geteuid() == 0 else pwd.getpwuid(os.geteuid())
    if os.geteuid() == 0 and shutil.which("setpriv") is None:
        pytest.skip("no setpriv to start the stack as a normal user")
    base = Path(tempfile.mkdtemp(prefix="roving-make-up-", dir=user.pw_dir))
    python = own_install(user, base)
    data_dir = base / "data"
    data_dir.mkdir()
    if os.geteuid() == 0:
        os.chown(data_dir, user.pw_uid, user.pw_gid)
    nats = find_binary()
    settings = {"HOME": user.pw_dir, "USER": user.pw_name, "LOGNAME": user.pw_name, "ROVING_NATS_SERVER": nats,
                "PYTHONDONTWRITEBYTECODE": "1",
                # a hot set of one and a quick round: retention, once the admin sets its limit, archives at once
                "ROVING_HOT_WORKFLOWS": "1", "ROVING_RETENTION_INTERVAL": "0.5"}
    stack = LocalStack(data_dir, nodes=1, settings=settings, command=tuple(as_user(user, str(python), "-c", UP)))
    try:
        yield stack.start(), user, base, python
    finally:
        stack.stop()
        shutil.rmtree(base, ignore_errors=True)


def test_the_admins_job_on_a_normal_users_stack_cannot_create_a_file_in_its_checkout_venv_or_home(normal_stack):
    stack, user, base, python = normal_stack
    site = next(python.parent.parent.glob("lib/python3*/site-packages"))
    targets = {base / "checkout" / "api" / "planted.py", site / "planted.pth",
               Path(user.pw_dir) / f"planted-{base.name}"}
    try:
        workflow = stack.submit(PROBE.format(targets=" ".join(map(str, sorted(targets)))), "probe")
        done = stack.wait_status(workflow, ("FINISHED", "FAILED"))
        log = stack.stage_log(workflow, "probe", "own directory written")
        assert done["status"] == "FINISHED", log
        assert [path for path in targets if path.exists()] == [], log
        assert all(f"refused {path}" in log for path in targets), log
    finally:
        for path in targets:
            path.unlink(missing_ok=True)


def test_a_second_tenants_job_is_refused_with_the_reason_while_the_admins_own_runs(normal_stack):
    stack = normal_stack[0]
    org = stack.client.post("/v4/organizations", json={"name": "tenants"}).json()["id"]
    body = {"username": "bea", "email": "bea@tenants.example", "password": PASSWORD}
    assert stack.client.post(f"/v4/organizations/{org}/users", json=body).status_code == 201
    login = stack.client.post("/v4/auth/login", json={"username": "bea", "password": PASSWORD}).json()
    with httpx.Client(base_url=stack.url, headers=stack.auth(login["token"]), timeout=30) as bea:
        theirs = stack.submit(HELLO, "bea-hello", bea)
        refused = stack.wait_status(theirs, ("FINISHED", "FAILED"))
        events = " ".join(e["message"] for e in stack.events(theirs))
    assert refused["status"] == "FAILED", events
    assert "cannot tell tenants apart: it runs only its admin's work" in events, events
    mine = stack.submit(HELLO, "admin-hello")
    assert stack.wait_status(mine, ("FINISHED", "FAILED"))["status"] == "FINISHED"
    node = stack.ready_nodes()[0]
    assert node["annotations"]["roving.io/tenants"].startswith("only:")
    assert "single-user" in (stack.data_dir / "stack.log").read_text()


def test_a_normal_users_stack_pushes_its_agents_work_over_nats_and_records_each_exit(normal_stack):
    stack = normal_stack[0]
    for _ in range(3):  # the agent hears its first push here (until then its polls answer as before)
        assert stack.wait_status(stack.submit(HELLO, "warm"), ("FINISHED", "FAILED"))["status"] == "FINISHED"
    time.sleep(0.5)
    before = work_requests(stack)
    assert before > 0, "no agent request counted: /metrics names no agent route"
    done = [stack.wait_status(stack.submit(HELLO, "pushed"), ("FINISHED", "FAILED")) for _ in range(5)]
    requests = work_requests(stack) - before
    assert [d["status"] for d in done] == ["FINISHED"] * 5, done
    assert [s["exit_code"] for d in done for s in d["stages"]] == [0] * 5, done
    assert requests <= 3, f"{requests} HTTP requests for 5 jobs' work and reports: HTTP still carried them"


def test_a_normal_users_stack_archives_and_purges_finished_workflows_into_a_directory_only_that_user_opens(
        normal_stack):
    """Last in this file: it purges the workflows the tests before it ran."""
    stack, user = normal_stack[0], normal_stack[1]
    ended = stack.submit(HELLO, "to-archive")
    assert stack.wait_status(ended, ("FINISHED", "FAILED"))["status"] == "FINISHED"
    stack.submit(HELLO, "pushes-it-out-of-the-hot-set")
    changed = stack.client.put("/v4/admin/centralconfig", json={"retention.finishedAfter": "1s"})
    assert changed.status_code == 200, changed.text
    stack.wait(lambda: (lambda a: a["workflows"] >= 1 and a["pending_purge"] == 0)(archived(stack)), 90,
               "a finished workflow archived and purged")
    directory = stack.data_dir / "archive"
    files = [path for path in directory.rglob("*") if path.is_file()]
    assert files, f"nothing in {directory}"
    found = directory.stat()
    assert (found.st_uid, oct(found.st_mode & 0o777)) == (user.pw_uid, oct(0o700))
    assert {(path.stat().st_uid, path.stat().st_mode & 0o077) for path in files} == {(user.pw_uid, 0)}
    assert stack.workflow(ended)["status"] == "FINISHED"  # purged from the stream, still answered


def test_a_normal_users_stack_stages_its_commits_in_a_memory_directory_only_that_user_opens(normal_stack):
    stack, user = normal_stack[0], normal_stack[1]
    assert stack.wait_status(stack.submit(HELLO, "staged"), ("FINISHED", "FAILED"))["status"] == "FINISHED"
    streams = list((stack.data_dir / "nats" / "jetstream" / "jetstream").glob("*/streams/ROVING_*/batches"))
    if not Path("/dev/shm").is_dir() or not streams:
        pytest.skip("no /dev/shm here, or no event stream in the store: staging stays on disk")
    target = Path(os.readlink(streams[0])) if streams[0].is_symlink() else None
    assert target is not None, "the event stream's batches stage on disk"
    assert target.is_relative_to(Path("/dev/shm") / f"roving-{user.pw_uid}")
    home = os.lstat(Path("/dev/shm") / f"roving-{user.pw_uid}")
    assert (home.st_uid, oct(home.st_mode & 0o777)) == (user.pw_uid, oct(0o700))
