"""A multinode job on the README's stack (two local nodes): its ranks start together, learn their peers, end together."""

from __future__ import annotations

import socket
import time
from pathlib import Path

TWO_RANKS = """
version: v4
jobs:
  ranks:
    image: {{uri: docker://alpine}}
    env: [SHARED={shared}]
    resource: {{cpu: {{cores: 1}}, memory: {{size: 64MiB}}}}
    multinode: {{nodes: 2, implementation: openmpi}}
    script: |
      echo "$FB_NODE_RANK of $FB_NNODES, leader $FB_LEADER_ADDR:$FB_LEADER_PORT" > "$SHARED/rank-$FB_NODE_RANK"
      cp "$FB_HOSTFILE" "$SHARED/hostfile-$FB_NODE_RANK"
      i=0
      until [ -e "$SHARED/rank-0" ] && [ -e "$SHARED/rank-1" ]; do   # a barrier: both ranks run at once
        i=$((i + 1)); [ "$i" -gt 300 ] && exit 9
        sleep 0.1
      done
"""

ONE_RANK_FAILS = """
version: v4
jobs:
  ranks:
    image: {uri: docker://alpine}
    resource: {cpu: {cores: 1}, memory: {size: 64MiB}}
    multinode: {nodes: 2}
    script: |
      [ "$FB_NODE_RANK" = 1 ] && sleep 1 && exit 3
      sleep 60
"""


def test_both_ranks_run_at_once_with_their_rank_and_the_hostfile_and_the_workflow_finishes(stack, job_dir: Path):
    done = stack.wait_status(stack.submit(TWO_RANKS.format(shared=job_dir), "ranks"), ("FINISHED", "FAILED"))
    assert done["status"] == "FINISHED", done
    first, second = (job_dir / "rank-0").read_text(), (job_dir / "rank-1").read_text()
    assert first.startswith("0 of 2, leader ") and second.startswith("1 of 2, leader ")
    assert first.split("leader ")[1] == second.split("leader ")[1]  # the same leader and port for both
    hostfile = (job_dir / "hostfile-0").read_text()
    assert hostfile == (job_dir / "hostfile-1").read_text()
    lines = hostfile.splitlines()  # the local agents register this host's name (or loopback) as their address
    assert len(lines) == 2 and {line.split()[0] for line in lines} <= {socket.gethostname(), "127.0.0.1"}
    assert all(line.endswith(" slots=1") for line in lines)
    assert first.split("leader ")[1].split(":")[0] == lines[0].split()[0]  # rank 0's node leads


def test_when_one_rank_fails_the_other_is_stopped_and_the_job_fails_naming_the_rank(stack):
    started = time.monotonic()
    done = stack.wait_status(stack.submit(ONE_RANK_FAILS, "one-fails"), ("FINISHED", "FAILED"), timeout=45)
    stage = done["stages"][0]
    assert (done["status"], stage["exit_code"]) == ("FAILED", 3), done
    assert "rank 1 exit 3" in stage["reason"]
    assert time.monotonic() - started < 40  # rank 0's `sleep 60` was stopped, not waited for
    stack.wait(lambda: all(not n["allocations"] for n in stack.client.get("/v4/nodes").json()["nodes"]), 10,
               "both nodes to give the job's capacity back")
