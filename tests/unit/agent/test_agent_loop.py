"""The agent loop against a fake API: register, run assignments, report with the epoch, obey fencing."""

from __future__ import annotations

import asyncio
import os
import socket
import sys
import time
from pathlib import Path

from prometheus_client import generate_latest

from adapters.adoption import found_jobs
from adapters.nats_server import free_port
from api.agent.args import AgentConfig
from api.agent.main import run_agent
from api.agent.metrics import NodeMetrics
from api.agent.pipe_keeper import release_pipes
from tests.unit.agent.fake_api import A1, A2, NODE_ID, FakeApi, wire
from tests.unit.agent.job_pids import host_pid, kill_job


def config(api: FakeApi, tmp_path: Path) -> AgentConfig:
    return AgentConfig(node="n1", api=api.url, token="tok", cpus=4, memory=2**30, devices={}, annotations={"rack": "r1"},
                       workdir=tmp_path / "work", heartbeat=0.2, poll=0.05, kill_grace=0.3, address="127.0.0.1")


def assignment(allocation_id: str, epoch: int = 1, **fields) -> dict:
    return wire(allocation_id, epoch, **fields)


HTTP = {"name": "http", "port": 8000, "protocol": "tcp"}


def port_of(number: int) -> dict:
    return {"name": f"p{number}", "port": number, "protocol": "tcp"}


def drive(api: FakeApi, tmp_path: Path, until, timeout: float = 10.0, agent_config: AgentConfig | None = None) -> None:
    """Run the agent until `until()` holds (or time runs out), then stop it and wait for it to finish."""

    async def main() -> None:
        stop = asyncio.Event()
        agent = asyncio.create_task(run_agent(agent_config or config(api, tmp_path), stop))
        deadline = time.monotonic() + timeout
        while not until() and time.monotonic() < deadline and not agent.done():
            await asyncio.sleep(0.02)
        stop.set()
        await agent

    asyncio.run(main())


def test_the_agent_registers_its_capacity_then_reports_started_and_exited_with_the_epoch(tmp_path):
    with FakeApi() as api:
        api.start = [assignment(A1, epoch=7, script="exit 4")]
        drive(api, tmp_path, until=lambda: ("exited", 7, 4) in api.events(A1))
    registered = api.registrations[0]
    isolation = registered["annotations"].pop("roving.io/isolation")
    assert registered["annotations"].pop("roving.io/job-user").endswith(",agent")  # AgentConfig's default
    assert registered["annotations"].pop("roving.io/runtime") == "host"
    assert registered["annotations"].pop("roving.io/sandbox") in ("bwrap", "none")  # bwrap where it is installed
    assert isolation in ("cgroup-v1", "cgroup-v2") if os.geteuid() == 0 else isolation == "none"
    assert registered | {"address": None} == {
        "name": "n1", "cpu": 4, "memory": 2**30, "devices": {}, "annotations": {"rack": "r1"},
        "definition": "", "address": None, "metrics_port": None, "segment": ""}  # "": in no segment
    assert api.events(A1) == [("started", 7, None), ("exited", 7, 4)]
    assert all(r["node_id"] == NODE_ID for r in api.reports)


def test_an_assignment_repeated_by_the_poll_runs_once(tmp_path):
    with FakeApi() as api:
        api.start = [assignment(A1, command=["true"])]
        drive(api, tmp_path, until=lambda: len(api.heartbeats) >= 3 and api.events(A1)[-1:] == [("exited", 1, 0)])
    assert api.events(A1) == [("started", 1, None), ("exited", 1, 0)]


def test_heartbeats_list_the_running_allocations(tmp_path):
    with FakeApi() as api:
        api.start = [assignment(A1, script="sleep 30")]
        drive(api, tmp_path, until=lambda: any(h["running"] == [A1] for h in api.heartbeats))
    assert any(h == {"node_id": NODE_ID, "epoch": 1, "running": [A1]} for h in api.heartbeats)
    assert api.events(A1)[-1] == ("exited", 1, 143)


def test_a_stale_epoch_on_heartbeat_stops_every_process_and_registers_again(tmp_path):
    def started_then_stale() -> bool:
        if api.events(A1) == [("started", 1, None)] and api.start:
            api.start, api.stale_heartbeats = [], 1
        return len(api.registrations) >= 2 and api.heartbeats[-1]["epoch"] == 2

    with FakeApi() as api:
        api.start = [assignment(A1, script="trap '' TERM; sleep 30")]
        drive(api, tmp_path, until=started_then_stale)
    assert len(api.registrations) == 2
    assert api.heartbeats[-1] == {"node_id": NODE_ID, "epoch": 2, "running": []}
    assert api.events(A1) == [("started", 1, None)]  # the fenced copy's exit is not reported


def test_a_refused_report_kills_the_fenced_copy(tmp_path):
    with FakeApi() as api:
        api.refused_reports = {(A1, "started")}
        api.start = [assignment(A1, script="sleep 30")]
        drive(api, tmp_path, until=lambda: len(api.heartbeats) >= 2 and api.heartbeats[-1]["running"] == [])
    assert api.heartbeats[-1]["running"] == []
    assert api.events(A1) == [("started", 1, None)]


def test_a_stop_order_cancels_the_process_with_its_reason(tmp_path):
    def started_then_stopped() -> bool:
        if api.events(A1) and not api.stop:
            api.stop = [{"allocation_id": A1, "epoch": 1, "workflow_id": "wf-1", "stage": A1, "state": "CANCELED",
                         "reason": "canceled by alice"}]
        return ("exited", 1, 143) in api.events(A1)

    with FakeApi() as api:
        api.start = [assignment(A1, script="sleep 30")]
        drive(api, tmp_path, until=started_then_stopped)
    assert [r["reason"] for r in api.reports if r["event"] == "exited"] == ["canceled by alice"]


def test_a_service_with_a_probe_reports_ready_after_it_passes(tmp_path):
    probe = {"exec": {"command": ["test", "-f", "ready"]}, "period-seconds": 0.05, "failure-threshold": 100}
    with FakeApi() as api:
        api.start = [assignment(A2, kind="service", script="sleep 0.2; touch ready; sleep 30", ports=[HTTP],
                                readiness_probe=probe)]
        drive(api, tmp_path, until=lambda: ("ready", 1, None) in api.events(A2))
    ready = [r for r in api.reports if r["event"] == "ready"]
    assert ready[0]["ports"] == [HTTP]  # echoed as the control plane sent them


def test_an_image_without_a_container_runtime_is_reported_as_run_on_the_host(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    with FakeApi() as api:
        api.start = [assignment(A1, command=["true"], image="docker://alpine:3.20")]
        drive(api, tmp_path, until=lambda: ("exited", 1, 0) in api.events(A1))
    assert [e for e, *_ in api.events(A1)] == ["started", "ran_on_host", "exited"]


def test_a_command_that_cannot_start_is_reported_as_exited_127(tmp_path):
    with FakeApi() as api:
        api.start = [assignment(A1, command=["/no/such/program"])]
        drive(api, tmp_path, until=lambda: bool(api.events(A1)))
    assert api.events(A1) == [("exited", 1, 127)]


def test_node_metrics_have_the_documented_names():
    metrics = NodeMetrics()
    metrics.failures.labels("start").inc()
    metrics.refresh(running=2)
    text = generate_latest(metrics.registry).decode()
    assert "roving_node_running_allocations 2.0" in text
    assert 'roving_node_job_failures_total{cause="start"} 1.0' in text
    assert 'roving_node_job_failures_total{cause="exit"} 0.0' in text
    assert "roving_node_disk_errors" in text and "roving_node_memory_errors" in text


def test_after_registering_the_agent_speaks_with_its_nodes_own_token(tmp_path):
    with FakeApi(node_token="own") as api:
        drive(api, tmp_path, until=lambda: len(api.heartbeats) >= 2)
    assert api.tokens_seen[0] == ("/v4/agent/register", "tok")  # the shared token only bootstraps
    assert {token for path, token in api.tokens_seen if path == "/v4/agent/heartbeat"} == {"own"}


def test_an_own_token_refused_sends_the_agent_back_to_the_bootstrap_token(tmp_path):
    def refused_then_recovered() -> bool:
        if api.heartbeats and not api.refused_tokens:
            api.refused_tokens.add("own")  # expired, say
        return api.refused_tokens and api.tokens_seen[-1] == ("/v4/agent/heartbeat", "tok") and len(api.heartbeats) > 1

    with FakeApi(node_token="own") as api:
        drive(api, tmp_path, until=refused_then_recovered)
    seen = list(api.tokens_seen)  # a poll may follow the last heartbeat before the agent stops
    last_own = max(i for i, (_, token) in enumerate(seen) if token == "own")
    assert ("/v4/agent/heartbeat", "tok") in seen[last_own + 1:]  # back on the bootstrap token, and kept to it
    assert len(api.heartbeats) > 1


LISTEN = ("{python} -c \"import socket, sys, time\nfor port in sys.argv[2:]:\n    s = socket.socket(); "
          "s.bind(('127.0.0.1', int(port))); s.listen(); globals()['k' + port] = s\ntime.sleep(float(sys.argv[1]))\" ")


def listen_script(first_sleep: float, ports: list[int], then: str = "sleep 30") -> str:
    """A service that waits, then listens on `ports` for a while, then does `then`."""
    return f"sleep {first_sleep}; " + LISTEN.format(python=sys.executable) + f"2 {' '.join(map(str, ports))}; {then}"


def test_a_services_readiness_names_the_ports_its_own_processes_listen_on_and_no_other(tmp_path):
    """A port another process holds (here: the test's own) is never counted, even when the service declares it."""
    foreign = socket.socket()
    foreign.bind(("127.0.0.1", 0))
    foreign.listen()
    own = free_port()
    probe = {"tcp-socket": {"port": own}, "period-seconds": 0.05, "failure-threshold": 100}
    try:
        with FakeApi() as api:
            api.start = [assignment(A2, kind="service", script=listen_script(0, [own]),
                                    ports=[port_of(own), port_of(foreign.getsockname()[1])], readiness_probe=probe)]
            drive(api, tmp_path, until=lambda: ("ready", 1, None) in api.events(A2))
    finally:
        foreign.close()
    ready = [r for r in api.reports if r["event"] == "ready"]
    assert ready[0]["listening"] == [own]


def test_a_service_ready_before_it_listens_is_reported_again_when_it_opens_and_closes_its_port(tmp_path):
    port = free_port()

    def seen(listening: list[int]) -> bool:
        return any(r.get("listening") == listening for r in api.reports if r["event"] == "ready")

    with FakeApi() as api:
        api.start = [assignment(A2, kind="service", script=listen_script(0.5, [port], then="sleep 30"))]
        drive(api, tmp_path, until=lambda: seen([port]) and seen([]) and len(
            [r for r in api.reports if r["event"] == "ready"]) >= 3, timeout=15)
    ready = [r.get("listening") for r in api.reports if r["event"] == "ready"]
    assert ready[:3] == [[], [port], []]
    changes = [r.get("change", 0) for r in api.reports if r["event"] == "ready"]
    assert len(set(changes)) == len(changes), "each readiness change is a report of its own"


def test_a_detaching_agent_leaves_its_job_running_and_reports_no_exit(tmp_path):
    """`roving up`'s graceful stop: the job runs on for the next agent to adopt (test_agent_resume adopts)."""
    async def main(api: FakeApi) -> None:
        stop, detach = asyncio.Event(), asyncio.Event()
        agent = asyncio.create_task(run_agent(config(api, tmp_path), stop, detach))
        deadline = time.monotonic() + 10
        while not any((tmp_path / "work").rglob("job.pid")) and time.monotonic() < deadline:
            await asyncio.sleep(0.02)
        detach.set()
        stop.set()
        await agent

    with FakeApi() as api:
        api.start = [assignment(A1, script="echo $$ > job.pid; sleep 30")]  # in its own directory: sandboxed
        asyncio.run(main(api))
    pid = host_pid(tmp_path / "work")
    (files, _), = found_jobs(tmp_path / "work" / ".roving-agent" / "jobs")
    try:
        os.kill(pid, 0)  # raises if the job is gone
        assert api.events(A1) == [("started", 1, None)]
        assert (files.directory / "keeper").exists(), "its output pipes are held for the next agent"
    finally:
        kill_job(pid)
        release_pipes(files)  # no next agent adopts it here: its pipes' keeper goes


def test_an_order_for_an_allocation_id_that_is_no_uuid_is_left_and_the_others_run(tmp_path):
    """No report of it could be taken (the protocol's ids are UUIDs): the agent logs it, never crashes on it."""
    with FakeApi() as api:
        api.start = [assignment("not-a-uuid", command=["true"]), assignment(A1, command=["true"])]
        drive(api, tmp_path, until=lambda: ("exited", 1, 0) in api.events(A1))
    assert api.events(A1) == [("started", 1, None), ("exited", 1, 0)]
    assert {r["allocation_id"] for r in api.reports} == {A1}


def test_a_run_spec_that_does_not_decode_fails_alone_naming_the_field_and_the_others_run(tmp_path):
    """A control plane's bad run spec (here a Fuzzfile's "4GiB" for bytes) is that allocation's failure, said in its
    exit; the rest of the answer starts and stops as usual."""
    with FakeApi() as api:
        api.start = [assignment(A2, memory_bytes="4GiB"), assignment(A1, command=["true"])]
        drive(api, tmp_path, until=lambda: ("exited", 1, 0) in api.events(A1) and api.events(A2))
    assert api.events(A2) == [("exited", 1, 126)]
    [refused] = [r["reason"] for r in api.reports if r["allocation_id"] == A2]
    assert refused.startswith("cannot start: its run spec is unreadable") and "$.memory_bytes" in refused
    assert api.events(A1) == [("started", 1, None), ("exited", 1, 0)]
