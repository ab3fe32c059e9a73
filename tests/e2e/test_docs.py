"""Every `# test` block of the user and admin guides, run as a reader would against a real `roving up` stack."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.doc_blocks import GUIDES, REPO, marked_blocks
from tests.e2e.stack import LocalStack

NEEDS = ("curl", "awk", "grep")  # what the blocks call besides roving, python3 and the shell


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory):
    """The README's stack, its local nodes declaring two GPUs each so that the GPU example can run."""
    running = LocalStack(tmp_path_factory.mktemp("roving"), settings={"ROVING_DECLARED_GPUS": "2"}).start()
    yield running
    running.stop()


def run_block(stack: LocalStack, home: Path, script: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
           "ROVING_API": stack.url, "ROVING_TOKEN": stack.token("admin"), "ROVING_DATA_DIR": str(stack.data_dir),
           "HOME": str(home)}
    # -x: a failing block's stderr shows each command it ran with its values (what a `why` said, say)
    return subprocess.run(["bash", "-xeuo", "pipefail", "-c", script], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=120)


def test_every_tested_command_of_the_guides_exits_0(stack, tmp_path):
    missing = [tool for tool in NEEDS if shutil.which(tool) is None]
    if missing:
        pytest.skip(f"the guides' commands need {', '.join(missing)}")
    ran = 0
    for guide in GUIDES:
        for line, script in marked_blocks(guide):
            done = run_block(stack, tmp_path, script)
            assert done.returncode == 0, (f"{guide.name}:{line} exited {done.returncode}\n{script}\n"
                                          f"stdout:\n{done.stdout[-2000:]}\nstderr:\n{done.stderr[-4000:]}")
            ran += 1
    assert ran >= 10
