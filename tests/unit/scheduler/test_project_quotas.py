"""Project quotas in the pass: roll-up to every ancestor, effective values, PROJECT_QUOTA with its figures, held work."""
from domain.scheduler import Reason, SchedulerConfig, schedule
from domain.scheduler.snapshot import ProjectLimit
from tests.unit.scheduler.builders import T0, GiB, job, node, running, snap

CONFIG = SchedulerConfig()
ALICE = "u-alice"


def projects(**limits: dict[str, int]) -> tuple[ProjectLimit, ...]:
    """`physics={"cpu": 8}` -> the project with that quota, alice a member of every one."""
    return tuple(ProjectLimit(path=path.replace("__", "/"), limits=found, members=(ALICE,))
                 for path, found in limits.items())


def mine(job_id: str, project: str, cpu: int = 1, **fields):
    return job(job_id, cpu=cpu, project=project, user_id=ALICE, **fields)


def test_work_over_its_project_quota_waits_with_the_project_and_the_figures():
    tree = projects(physics={"cpu": 8})
    busy = [running("r1", ("n1",), cpu=6, project="physics", user_id=ALICE)]
    d = schedule(snap([mine("big", "physics", cpu=4)], busy, nodes=[node("n1", cpu=32)], projects=tree), CONFIG, T0)
    why = d.reasons["big"]
    assert d.placements == []
    assert why.reason is Reason.PROJECT_QUOTA
    assert why.detail == {"project": "physics", "resource": "cpu", "used": 6, "asked": 4, "limit": 8,
                          "never_fits": False}
    assert "project physics" in why.message and "6 of 8 in use, this asks 4" in why.message


def test_a_childs_work_counts_toward_every_ancestor():
    tree = projects(physics={"cpu": 8}, physics__lattice={}, physics__qcd={})
    busy = [running("r1", ("n1",), cpu=5, project="physics/qcd", user_id=ALICE)]
    d = schedule(snap([mine("a", "physics/lattice", cpu=2), mine("b", "physics/lattice", cpu=2, minutes_ago=-1)],
                      busy, nodes=[node("n1", cpu=32)], projects=tree), CONFIG, T0)
    assert [p.allocation_id for p in d.placements] == ["a"]
    why = d.reasons["b"]
    assert why.reason is Reason.PROJECT_QUOTA
    assert why.detail["project"] == "physics" and why.detail["own_project"] == "physics/lattice"
    assert (why.detail["used"], why.detail["asked"]) == (7, 2)


def test_one_pass_never_places_past_a_quota():
    tree = projects(ml={"cpu": 3})
    queued = [mine(f"j{i}", "ml", cpu=1, minutes_ago=10 - i) for i in range(6)]
    d = schedule(snap(queued, nodes=[node("n1", cpu=16)], projects=tree), CONFIG, T0)
    assert len(d.placements) == 3
    assert {d.reasons[f"j{i}"].reason for i in range(3, 6)} == {Reason.PROJECT_QUOTA}


def test_work_over_quota_does_not_hold_the_cluster_for_other_projects():
    tree = projects(ml={"cpu": 2}, hpc={})
    busy = [running("r1", ("n1",), cpu=2, project="ml", user_id=ALICE)]
    waiting = mine("blocked", "ml", cpu=2, organization_priority=100)
    other = mine("other", "hpc", cpu=4)
    d = schedule(snap([waiting, other], busy, nodes=[node("n1", cpu=8)], projects=tree), CONFIG, T0)
    assert [p.allocation_id for p in d.placements] == ["other"]
    assert d.reservation is None


def test_memory_and_devices_are_limited_and_multinode_work_counts_every_node():
    tree = projects(gpu={"devices.gpu": 4, "memory": 64 * GiB})
    wide = mine("wide", "gpu", devices={"gpu": 1}, nodes=5)
    fat = mine("fat", "gpu", memory=40 * GiB, nodes=2)
    nodes = [node(f"n{i}", devices={"gpu": 2}, memory=128 * GiB) for i in range(6)]
    d = schedule(snap([wide, fat], nodes=nodes, projects=tree), CONFIG, T0)
    assert d.placements == []
    assert d.reasons["wide"].detail["resource"] == "devices.gpu" and d.reasons["wide"].detail["asked"] == 5
    assert d.reasons["fat"].detail["resource"] == "memory" and d.reasons["fat"].detail["never_fits"] is True
    assert "can never run under project gpu's quota: it asks memory 80 GiB, the quota is 64 GiB" in \
        d.reasons["fat"].message


def test_exclusive_work_is_charged_the_whole_node():
    tree = projects(ml={"cpu": 8})
    d = schedule(snap([mine("excl", "ml", cpu=2, exclusive=True)], nodes=[node("n1", cpu=16)], projects=tree),
                 CONFIG, T0)
    assert d.placements == []
    assert d.reasons["excl"].reason is Reason.PROJECT_QUOTA and d.reasons["excl"].detail["asked"] == 16


def test_exclusive_running_work_holds_its_whole_node_against_the_quota():
    tree = projects(ml={"cpu": 8})
    busy = [running("r1", ("n1",), cpu=1, exclusive=True, project="ml", user_id=ALICE)]
    d = schedule(snap([mine("one", "ml", cpu=1)], busy, nodes=[node("n1"), node("n2")], projects=tree), CONFIG, T0)
    assert d.reasons["one"].detail["used"] == 8 and d.reasons["one"].reason is Reason.PROJECT_QUOTA


def test_work_of_a_deleted_project_or_an_owner_who_left_is_held_with_the_cause():
    tree = (ProjectLimit(path="kept", members=("u-bob",)),)
    d = schedule(snap([mine("gone", "deleted"), mine("left", "kept")], nodes=[node("n1")], projects=tree), CONFIG, T0)
    assert d.reasons["gone"].reason is Reason.PROJECT_HELD and d.reasons["gone"].detail["cause"] == "deleted"
    assert d.reasons["left"].reason is Reason.PROJECT_HELD and d.reasons["left"].detail["cause"] == "not_a_member"
    assert d.placements == []


def test_work_without_a_project_is_not_limited():
    tree = projects(ml={"cpu": 0})
    d = schedule(snap([job("free", cpu=4)], nodes=[node("n1")], projects=tree), CONFIG, T0)
    assert [p.allocation_id for p in d.placements] == ["free"]


def test_preempting_a_victim_gives_its_quota_back_in_the_same_pass():
    from domain.scheduler import GroupPolicy

    config = SchedulerConfig(preemption_enabled=True, preemption_threshold=0, min_preemption_runtime_seconds=0)
    tree = projects(ml={"cpu": 8})
    victim = running("victim", ("n1",), cpu=8, project="ml", user_id=ALICE, preemptible=True, group_id="low")
    urgent = mine("urgent", "other", cpu=8, organization_priority=100, group_id="high")
    behind = mine("behind", "ml", cpu=4, minutes_ago=5)
    tree += projects(other={})
    policies = (GroupPolicy(group_id="high", may_preempt=("low",)),)
    d = schedule(snap([urgent, behind], [victim], nodes=[node("n1"), node("n2", cpu=4)], projects=tree,
                      group_policies=policies), config, T0)
    assert [p.victim_ids for p in d.preemptions] == [("victim",)]
    assert "behind" in d.placed_nodes()  # the victim's 8 cpu of ml's quota are free again


def test_a_service_starts_only_with_room_left_for_its_workflows_largest_job():
    """The soak's deadlock: three services filled soak/a's 3 cores while each one's job waited for that quota, for
    good (a service holds its quota until its jobs end). A service now waits unless its job would still fit."""
    from domain.scheduler.snapshot import Kind

    tree = projects(lab={"cpu": 3})
    busy = [running("s1", ("n1",), kind=Kind.SERVICE, project="lab", user_id=ALICE, companion={"cpu": 1}),
            running("s2", ("n1",), kind=Kind.SERVICE, project="lab", user_id=ALICE, companion={"cpu": 1})]
    third = mine("s3", "lab", kind=Kind.SERVICE, companion={"cpu": 1}, minutes_ago=5)
    own_job = mine("j1", "lab", workflow_id="wf-s1")
    d = schedule(snap([third, own_job], busy, nodes=[node("n1", cpu=16)], projects=tree), CONFIG, T0)
    assert [p.allocation_id for p in d.placements] == ["j1"]
    why = d.reasons["s3"]
    assert why.reason is Reason.PROJECT_QUOTA and why.detail["kept_for_jobs"] == 1
    assert "2 of 3 in use, this asks 1 and keeps 1 free for its workflow's largest job" in why.message


def test_a_service_whose_job_could_never_fit_beside_it_says_so():
    from domain.scheduler.snapshot import Kind

    tree = projects(lab={"cpu": 3})
    service = mine("s1", "lab", cpu=2, kind=Kind.SERVICE, companion={"cpu": 2})
    d = schedule(snap([service], nodes=[node("n1", cpu=16)], projects=tree), CONFIG, T0)
    why = d.reasons["s1"]
    assert d.placements == [] and why.detail["never_fits"] is True
    assert "can never run" in why.message and "keeps 2 free" in why.message
