"""`roving run` in a real pseudo-terminal on the README's stack: while its job gets ready a line may say what it
waits on; once the output starts that line is gone, the output is the job's own and the exit code its."""

from __future__ import annotations

import os

from tests.unit.api.test_cli_waits import in_terminal


def test_run_on_a_terminal_shows_only_the_jobs_output_and_exits_with_its_code(stack, tmp_path):
    env = {**os.environ, "ROVING_API": stack.url, "ROVING_TOKEN": stack.token("admin"), "HOME": str(tmp_path),
           "TERM": "xterm"}
    env.pop("FB_WORKFLOW_TOKEN", None)
    code, shown = in_terminal(["run", "--", "sh", "-c", "sleep 2; echo from-the-job; exit 4"], env)
    assert code == 4, shown
    after = shown.split("\r\x1b[K")[-1]  # whatever was drawn before the output was cleared first
    assert "from-the-job\r\n" in after and "pulling" not in after
    assert shown.count("from-the-job") == 1
