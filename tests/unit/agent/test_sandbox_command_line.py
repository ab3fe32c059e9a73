"""The host sandbox's command line keeps up with the node between jobs: what it keeps from one job to the next (the
node's top-level entries) is listed again when the node's root changed, and a hidden path made after the agent
started is covered for the next job (adapters/runtime/host.py)."""

from __future__ import annotations

import os
import time
from pathlib import Path

from adapters.runtime import host
from adapters.runtime.host import HostSandbox


def bound(sandbox: HostSandbox, work: Path) -> list[str]:
    """The node paths a job's sandbox binds read-only."""
    argv = sandbox.wrap(["true"], work, work, {}, shared=work.parent)
    return [argv[i + 1] for i, arg in enumerate(argv) if arg == "--ro-bind"]


def settled(path: Path, seconds_ago: float = 30.0) -> None:
    """As if the directory had last changed a while ago."""
    at = time.time() - seconds_ago
    os.utime(path, (at, at))


def test_a_top_level_directory_an_admin_adds_shows_in_the_next_jobs_sandbox(tmp_path):
    root, work = tmp_path / "root", tmp_path / "work" / "wf" / "j-1"
    (root / "opt").mkdir(parents=True)
    work.mkdir(parents=True)
    settled(root)
    sandbox = HostSandbox("/usr/bin/bwrap", root=root)
    assert str(root / "opt") in bound(sandbox, work)
    (root / "data").mkdir()
    assert str(root / "data") in bound(sandbox, work)
    (root / "opt").rmdir()
    assert str(root / "opt") not in bound(sandbox, work)


def test_a_directory_added_in_the_same_clock_tick_as_the_last_listing_is_not_missed(tmp_path):
    """File times are coarse: a change right after a listing may leave the root's time as it was."""
    root, work = tmp_path / "root", tmp_path / "work" / "wf" / "j-1"
    (root / "opt").mkdir(parents=True)
    work.mkdir(parents=True)
    sandbox = HostSandbox("/usr/bin/bwrap", root=root)
    before = root.stat()
    assert str(root / "data") not in bound(sandbox, work)
    (root / "data").mkdir()
    os.utime(root, ns=(before.st_atime_ns, before.st_mtime_ns))  # the same tick as the listing
    assert str(root / "data") in bound(sandbox, work)


def test_a_hidden_file_made_after_the_agent_started_is_covered_for_the_next_job(tmp_path, monkeypatch):
    monkeypatch.setattr(host, "PRIVATE", ("/dev/shm",))  # pytest's directory stands for the node's, not scratch
    work, token = tmp_path / "work" / "wf" / "j-1", tmp_path / "node" / "admin.token"
    work.mkdir(parents=True)
    token.parent.mkdir()
    sandbox = HostSandbox("/usr/bin/bwrap", hidden=(token,))
    assert str(token) not in sandbox.wrap(["true"], work, work, {}, shared=work.parent)
    token.write_text("rv1.secret")
    argv = sandbox.wrap(["true"], work, work, {}, shared=work.parent)
    assert argv[argv.index(str(token)) - 2:argv.index(str(token)) + 1] == ["--ro-bind", "/dev/null", str(token)]
