"""A supervised service on the README stack: it fails twice, is restarted each time after its backoff (each restart
an event), and the job that depends on it starts once it stays up."""

from __future__ import annotations


def test_a_service_that_fails_twice_is_restarted_and_its_dependent_starts_once_it_stays_up(stack, job_dir):
    count, up = job_dir / "db-starts", job_dir / "db-up"
    definition = f"""
version: v4
services:
  db:
    image: {{uri: docker://alpine:3.20}}
    policy: {{restart: on-failure}}
    roving-restart: {{attempts: 3, backoff: 0.2s}}
    readiness-probe: {{exec: {{command: [test, -f, "{up}"]}}, period-seconds: 1}}
    script: |
      n=$(cat {count} 2>/dev/null || echo 0); n=$((n + 1)); echo $n > {count}
      if [ $n -lt 3 ]; then echo "failing start $n"; exit 1; fi
      touch {up}; echo up; sleep 600
jobs:
  client:
    image: {{uri: docker://alpine:3.20}}
    depends-on: [{{name: db, status: RUNNING}}]
    script: echo "db came up after $(cat {count}) starts"
"""
    workflow_id = stack.submit(definition, "supervised")
    done = stack.wait_status(workflow_id, ("FINISHED", "FAILED"), timeout=90)
    stages = {s["name"]: s for s in done["stages"]}
    assert (done["status"], stages["db"]["attempts"], stages["client"]["status"]) == ("FINISHED", 3, "FINISHED")
    assert "db came up after 3 starts" in stack.stage_log(workflow_id, "client", "db came up after 3 starts")
    restarts = [e["message"] for e in stack.events(workflow_id) if e["type"] == "Workflow.StageRetried"]
    assert len(restarts) == 2 and all("exit 1" in m for m in restarts)


def test_a_hung_service_is_killed_by_its_liveness_probe_and_restarted(stack, job_dir):
    count, healthy = job_dir / "api-starts", job_dir / "api-healthy"
    definition = f"""
version: v4
services:
  api:
    image: {{uri: docker://alpine:3.20}}
    policy: {{restart: on-failure}}
    roving-restart: {{attempts: 2, backoff: 0.2s}}
    roving-liveness-probe: {{exec: {{command: [test, -f, "{healthy}"]}}, period-seconds: 1, failure-threshold: 2}}
    script: |
      n=$(cat {count} 2>/dev/null || echo 0); n=$((n + 1)); echo $n > {count}
      touch {healthy}
      if [ $n -eq 1 ]; then sleep 1; rm -f {healthy}; echo "hanging"; fi
      sleep 600
jobs:
  client:
    image: {{uri: docker://alpine:3.20}}
    depends-on: [{{name: api, status: RUNNING}}]
    script: until [ "$(cat {count})" = 2 ]; do sleep 0.2; done; echo "served by start 2"
"""
    workflow_id = stack.submit(definition, "liveness")
    done = stack.wait_status(workflow_id, ("FINISHED", "FAILED"), timeout=90)
    assert (done["status"], {s["name"]: s["attempts"] for s in done["stages"]}["api"]) == ("FINISHED", 2)
    restarts = [e["message"] for e in stack.events(workflow_id) if e["type"] == "Workflow.StageRetried"]
    assert len(restarts) == 1 and "liveness probe failed 2 times" in restarts[0]
