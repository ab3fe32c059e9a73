import random
from datetime import timedelta

from domain.scheduler import GroupPolicy, NodeView, QueuedAllocation, SchedulerConfig
from domain.scheduler.simulator import SimJob, Simulator
from tests.unit.scheduler.builders import T0, GiB


def trace(seed: int):
    """A full cluster, a wide high-priority head arriving into it, then small jobs (accurate walltimes)."""
    rng = random.Random(seed)
    nodes = [NodeView(id=f"n{i}", name=f"n{i}", cpu=16, memory=64 * GiB) for i in range(6)]
    jobs = [SimJob(allocation=QueuedAllocation(id=f"init{i}", workflow_id="init", stage=f"s{i}", submitted_at=T0,
                                               cpu=8, execute_timeout=(t := rng.randint(1800, 7200))), runtime=t)
            for i in range(12)]
    head = QueuedAllocation(id="head", workflow_id="big", stage="train", submitted_at=T0 + timedelta(minutes=1),
                            cpu=16, nodes=4, execute_timeout=3600, organization_priority=100)
    jobs.append(SimJob(allocation=head, runtime=3600))
    for i in range(80):
        runtime = rng.randint(300, 3600)
        jobs.append(SimJob(allocation=QueuedAllocation(
            id=f"j{i}", workflow_id=f"w{i}", stage="main", submitted_at=T0 + timedelta(minutes=2 + i),
            cpu=rng.choice([2, 4, 8]), execute_timeout=None if rng.random() < 0.2 else runtime), runtime=runtime))
    return nodes, jobs


def run(seed: int, backfill: bool):
    nodes, jobs = trace(seed)
    return Simulator(nodes, jobs, SchedulerConfig(backfill_enabled=backfill)).run()


def test_backfill_raises_utilization_without_delaying_the_head():
    for seed in (1, 2):
        on, off = run(seed, True), run(seed, False)
        assert on.utilization > off.utilization
        assert on.started["head"] <= off.started["head"]
        assert on.started["head"] <= on.predicted_start["head"]
        assert len(on.finished) == len(off.finished) == 93


def test_a_preempted_job_is_requeued_and_runs_again_later():
    nodes = [NodeView(id="n1", cpu=8, memory=GiB)]
    batch = QueuedAllocation(id="batch", workflow_id="wb", stage="crunch", submitted_at=T0, cpu=8,
                             group_id="batch", preemptible=True)
    urgent = QueuedAllocation(id="urgent", workflow_id="wu", stage="fix", submitted_at=T0 + timedelta(minutes=5),
                              cpu=8, group_id="prod", organization_priority=50, execute_timeout=600)
    config = SchedulerConfig(preemption_enabled=True)
    policies = (GroupPolicy(group_id="prod", may_preempt=("batch",)),)
    jobs = [SimJob(allocation=batch, runtime=3600), SimJob(allocation=urgent, runtime=600)]
    sim = Simulator(nodes, jobs, config, policies)
    outcome = sim.run()
    assert outcome.preemptions == 1
    assert outcome.started["urgent"] == T0 + timedelta(minutes=5)
    assert outcome.finished["batch"] == T0 + timedelta(minutes=15, hours=1)


def elastic_trace():
    """One 8-cpu node and a burst of 4-cpu jobs (10 min each) it cannot hold at once."""
    nodes = [NodeView(id="n1", name="n1", cpu=8, memory=64 * GiB)]
    jobs = [SimJob(allocation=QueuedAllocation(id=f"j{i}", workflow_id=f"w{i}", stage="main", cpu=4,
                                               submitted_at=T0 + timedelta(seconds=i), execute_timeout=900),
                   runtime=600) for i in range(8)]
    return nodes, jobs


def test_the_simulator_brings_nodes_up_for_waiting_work_and_removes_them_when_idle():
    from domain.scheduler import NodeTemplate
    from domain.scheduler.elastic_sim import ElasticSimulator, SimProvisioner

    nodes, jobs = elastic_trace()
    fixed = Simulator(nodes, jobs, SchedulerConfig()).run()
    template = NodeTemplate(provisioner="burst", cpu=8, memory=64 * GiB, max_nodes=2, expected_seconds=60)
    sim = ElasticSimulator(nodes, jobs, SchedulerConfig(), [SimProvisioner(template=template, boot_seconds=60,
                                                                           idle_seconds=120)])
    elastic = sim.run()
    assert len(elastic.finished) == len(fixed.finished) == 8
    assert sim.requested == 2 and sim.removed == 2 and not sim.made  # maxNodes held; both gone when idle
    waits = [(elastic.started[f"j{i}"] - T0).total_seconds() for i in range(8)]
    # j2-j5 were packed two to a node asked for as each arrived (60 s to boot); j6-j7 found maxNodes reached
    assert waits == [0, 1, 62, 62, 64, 64, 600, 601]
    assert elastic.makespan_seconds < fixed.makespan_seconds * 0.6
    assert 0 < elastic.utilization <= 1
