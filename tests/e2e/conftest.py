"""One README stack per e2e module."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest

from tests.e2e.stack import LocalStack

WRITABLE = "ROVING_AGENT_WRITABLE"  # the node paths a job may write: the rest of the node is read-only to it


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory, job_dir: Path):
    running = LocalStack(tmp_path_factory.mktemp("roving"), settings={WRITABLE: str(job_dir)}).start()
    yield running
    running.stop()


@pytest.fixture(scope="module")
def job_dir():
    """A directory the stack's jobs may write (its agents are told so: the node is read-only to a job), for as long
    as the module's stack runs (its services serve from there): a root agent runs jobs as nobody, who cannot enter
    pytest's 0700 tmp_path."""
    path = Path(tempfile.mkdtemp(prefix="roving-e2e-"))
    path.chmod(0o777)
    yield path
    shutil.rmtree(path, ignore_errors=True)
