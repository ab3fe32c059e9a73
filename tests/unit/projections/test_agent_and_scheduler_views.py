"""Given placements, the agent learns what to start and stop, and the scheduler gets its snapshot."""

from datetime import timedelta

from domain.agent_protocol import Assignments
from domain.node import Capacity
from domain.scheduler.snapshot import Kind, NodeStatus
from domain.tenancy import Group, Role
from tests.unit.projections.builders import ONE_JOB, Feed, GiB, at, node, request, submit, uid, wire

SERVICE = (
    "version: v4\nfiles:\n  cfg: 'port=8080'\njobs:\n"
    "  train: {image: {uri: docker://alpine:3.20}, script: 'echo hi', env: [A=1],"
    " resource: {cpu: {cores: 2}, memory: {size: 1GiB}}, policy: {timeout: {execute: 10m}},"
    " depends-on: [{name: web, status: RUNNING}]}\n"
    "services:\n  web: {image: {uri: docker://nginx:1}, command: [nginx], files: {/etc/app.cfg: 'file://cfg'},"
    " network: {ports: [{name: http, port: 8080}]}, readiness-probe: {tcp-socket: {port: 8080}}}\n"
)


def placed(feed: Feed, text: str, stage: str, on, name: str = "wf"):
    workflow = submit(text, name=name)
    allocation = request(workflow, stage)
    allocation.place([str(on.id)], by="scheduler", at=at(1))
    workflow.stage_started(stage, 1, on.name, at(1))
    feed.save(workflow, allocation)
    return workflow, allocation


def test_the_agent_is_told_to_start_a_placed_service_with_its_run_spec():
    feed, n1 = Feed(), node("node-1")
    feed.save(n1)
    workflow, allocation = placed(feed, SERVICE, "web", n1)
    [spec] = wire(feed.views.assignments(n1.id))
    assert (spec["allocation_id"], spec["epoch"], spec["kind"], spec["job"], spec["task_id"]) == (
        str(allocation.id), 1, "service", "web", None)
    assert (spec["image"], spec["command"], spec["files"]) == ("docker://nginx:1", ["nginx"], {"/etc/app.cfg": "port=8080"})
    assert spec["readiness_probe"] == {"tcp-socket": {"port": 8080}}
    assert spec["ports"] == [{"name": "http", "port": 8080, "protocol": "tcp"}]
    assert feed.views.assignments(node("node-2").id) == Assignments([], [], [])


def test_a_job_run_spec_carries_its_script_env_memory_and_execute_timeout():
    feed, n1 = Feed(), node("node-1")
    feed.save(n1)
    workflow = submit(SERVICE)
    workflow.stage_started("web", 1, "node-1", at(1))
    workflow.stage_running("web", 1, at(2))
    allocation = request(workflow, "train", minute=2)
    allocation.place([str(n1.id)], by="scheduler", at=at(3))
    feed.save(workflow, allocation)
    [spec] = wire(feed.views.assignments(str(n1.id)))
    assert (spec["script"], spec["env"], spec["memory_bytes"], spec["execute_timeout_seconds"]) == (
        "#!/bin/sh\necho hi", {"A": "1"}, GiB, 600.0)
    assert spec["account_id"] == str(uid("group"))


def test_preempted_and_canceled_work_is_listed_to_stop_with_the_reason():
    feed, n1 = Feed(), node("node-1")
    feed.save(n1)
    _, preempted = placed(feed, ONE_JOB, "main", n1, name="first")
    canceled_workflow, running = placed(feed, ONE_JOB, "main", n1, name="second")
    preempted.preempt("Preempted by workflow wf-u job urgent", by="scheduler", at=at(2))
    canceled_workflow.cancel(by="bob", at=at(2), reason="wrong input")
    feed.save(preempted, canceled_workflow)
    answer = feed.views.assignments(n1.id)
    assert answer.start == []
    assert sorted((s.allocation_id, s.reason) for s in answer.stop) == sorted([
        (str(preempted.id), "Preempted by workflow wf-u job urgent"),
        (str(running.id), "workflow canceled: wrong input")])


def test_a_rejoined_agent_is_not_told_about_its_previous_life():
    feed, n1 = Feed(), node("node-1")
    feed.save(n1)
    _, allocation = placed(feed, ONE_JOB, "main", n1)
    allocation.evict("lease lapsed", by="monitor", at=at(2))
    n1.rejoin(Capacity(cpu=8, memory=32 * GiB), [], by="agent", at=at(3))
    feed.save(allocation, n1)
    assert feed.views.assignments(n1.id) == Assignments([], [], [])


def test_the_snapshot_queues_ready_work_and_holds_running_work_until_its_deadline():
    feed, n1 = Feed(), node("node-1", annotations={"gpu": "none", "rack": "a"})
    feed.save(n1, node("node-2", cpu=16, annotations={"gpu": "none", "rack": "b"}), node("big", definition="gpu"))
    workflow = submit(SERVICE)
    workflow.stage_started("web", 1, "node-1", at(1))
    workflow.stage_running("web", 1, at(2))
    train = request(workflow, "train", minute=2)
    train.place([str(n1.id)], by="scheduler", at=at(3))
    waiting = request(submit(ONE_JOB, name="other"), "main", minute=4, group_priority=2)
    feed.save(workflow, train, waiting)
    snapshot = feed.views.scheduler_snapshot(at(5))
    [queued], [running] = snapshot.queued, snapshot.running
    assert (queued.id, queued.group_priority, queued.kind, queued.submitted_at) == (str(waiting.id), 2, Kind.JOB, at(4))
    assert (running.node_ids, running.started_at, running.deadline, running.cpu) == (
        (str(n1.id),), at(3), at(3) + timedelta(minutes=10), 2)
    assert {n.name: n.status for n in snapshot.nodes} == {"node-1": NodeStatus.READY, "node-2": NodeStatus.READY,
                                                           "big": NodeStatus.READY}
    small = next(d for d in snapshot.definitions if d.id == "cpu-small")
    assert (small.max_nodes, small.shape.cpu, small.annotations) == (2, 16, {"gpu": "none"})


def test_the_snapshot_carries_group_preempt_lists_and_earlier_preemptions():
    feed, n1 = Feed(), node("node-1")
    urgent = Group.create(uid("urgent"), uid("org"), "urgent", [], by="root", at=at(0))
    urgent.set_preempt_list([uid("group")], by="root", by_role=Role.CLUSTER_ADMIN, at=at(0))
    feed.save(n1, urgent)
    workflow, allocation = placed(feed, ONE_JOB, "main", n1)
    allocation.preempt("Preempted by workflow u job x", by="scheduler", at=at(2))
    workflow.stage_preempted("main", 1, at(2))
    feed.save(allocation, workflow, request(workflow, "main", attempt=2, minute=2))
    snapshot = feed.views.scheduler_snapshot(at(3))
    assert [(p.group_id, p.may_preempt) for p in snapshot.group_policies] == [(str(urgent.id), (str(uid("group")),))]
    assert snapshot.queued[0].preemptions == (at(2),)


GPU_JOB = ("version: v4\njobs:\n  train: {image: {uri: docker://alpine:3.20}, script: 'nvidia-smi',"
           " resource: {devices: {nvidia.com/gpu: 2}}, network: {isolated: true}}\n")


def test_a_gpu_job_run_spec_asks_the_agent_for_its_devices_and_private_network():
    feed, n1 = Feed(), node("node-1")
    feed.save(n1)
    placed(feed, GPU_JOB, "train", n1)
    [spec] = wire(feed.views.assignments(n1.id))
    assert spec["devices"] == {"nvidia.com/gpu": 2}
    assert spec["network_isolated"] is True


def test_a_job_without_devices_gets_none_bound():
    feed, n1 = Feed(), node("node-1")
    feed.save(n1)
    placed(feed, ONE_JOB, "main", n1)
    [spec] = wire(feed.views.assignments(n1.id))
    assert "devices" not in spec and "network_isolated" not in spec


BUILDS = (
    "version: v4\nimages:\n  tools: {from: 'docker://busybox:1', post: 'touch /opt/t', scope: group}\n"
    "jobs:\n  use: {image: {uri: 'fuzzball://user/tools'}, command: [/opt/t]}\n"
)


def test_a_build_is_started_with_its_plan_and_whose_image_it_becomes():
    feed, n1 = Feed(), node("node-1")
    feed.save(n1)
    placed(feed, BUILDS, "build:tools", n1)
    [spec] = wire(feed.views.assignments(n1.id))
    assert (spec["kind"], spec["build"]["name"], spec["build"]["post"], spec["build"]["scope"]) == (
        "build", "tools", "touch /opt/t", "group")
    assert (spec["image_owner"], spec["image_group"]) == (str(uid("alice")), str(uid("group")))


def test_a_job_in_a_built_image_is_told_whose_image_to_look_up():
    feed, n1 = Feed(), node("node-1")
    feed.save(n1)
    workflow = submit(BUILDS)
    workflow.stage_started("build:tools", 1, "node-1", at(1))
    workflow.stage_exited("build:tools", 1, 0, at(2), told="image tools built and stored (1.0 MB)")
    allocation = request(workflow, "use", minute=2)
    allocation.place([str(n1.id)], by="scheduler", at=at(3))
    feed.save(workflow, allocation)
    [spec] = wire(feed.views.assignments(str(n1.id)))
    assert (spec["image"], spec["image_owner"], spec["image_group"]) == (
        "fuzzball://user/tools", str(uid("alice")), str(uid("group")))
    assert "build" not in spec


def test_the_agent_builds_what_it_runs_from_a_service_and_a_job_run_spec():
    """The run spec is one type on both sides (domain/agent_start.Start): a field renamed on one side is a type error
    or a failed decode, never a key that reaches the agent as nothing."""
    from api.agent.starts import build_spec
    feed, n1 = Feed(), node("node-1")
    feed.save(n1)
    placed(feed, SERVICE, "web", n1)
    [service] = feed.views.assignments(n1.id).start
    built = build_spec(service)
    assert (built.job, built.kind, built.readiness_probe is not None) == ("web", "service", True)
    workflow = submit(SERVICE, name="second")
    workflow.stage_started("web", 1, "node-1", at(1))
    workflow.stage_running("web", 1, at(2))
    allocation = request(workflow, "train", minute=2)
    allocation.place([str(n1.id)], by="scheduler", at=at(3))
    feed.save(workflow, allocation)
    job = next(s for s in feed.views.assignments(n1.id).start if s.kind == "job")
    assert (build_spec(job).memory_bytes, build_spec(job).execute_timeout_seconds) == (GiB, 600.0)
