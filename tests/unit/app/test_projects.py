"""Projects through the application: making them, which project a submission runs under, what is refused at
submission (naming the project), and the ledgers that make quotas and licenses exact at commit."""

from __future__ import annotations

from uuid import uuid4

import pytest

from domain.app import Conflict, Forbidden, Invalid, NotFound, ReadModelFunctions, Roving
from domain.app.ids import allocation_id, group_id
from domain.ids import ledger_id
from domain.ledger import PROJECT, SHARED
from tests.unit.app.builders import ADMIN, T0, later, user
from tests.unit.posix.test_posix_ids import FastHasher

PASSWORD = "Correct-Horse-Battery-9"
JOB = """
version: v4
{project}
jobs:
  train:
    image: {{uri: docker://alpine}}
    script: echo train
    resource: {{cpu: {{cores: {cores}}}{shared}}}
"""


def app(read_models=None) -> Roving:
    """Users are registered here (membership names real users): a stored-hash shape the User accepts, no scrypt."""
    return Roving(env={"PERSISTENCE_MODULE": "eventsourcing.popo", "ROVING_CLUSTER": "test",
                       "TRANSCODER_TOPIC": "adapters.transcoder:MsgspecTranscoder"}, passwords=FastHasher(),
                  read_models=read_models)


def fuzzfile(project: str = "", cores: int = 2, shared: str = "") -> str:
    return JOB.format(project=f"project: {project}" if project else "", cores=cores,
                      shared=f", shared: {{{shared}}}" if shared else "")


@pytest.fixture
def world():
    """An application whose read models see its own projects (as the composition root wires the views)."""
    holder: dict = {"paths": set()}
    roving = app(ReadModelFunctions(projects=lambda: sorted(holder["paths"]),
                                    projects_of=lambda name: sorted(p for p, m in holder["members"].items() if name in m)))
    holder["roving"], holder["members"] = roving, {}
    org = roving.create_organization("acme", ADMIN, T0)
    for name in ("alice", "bob"):
        roving.create_user(org, name, f"{name}@acme.test", PASSWORD, "user", ADMIN, T0)

    def put(path: str, quota=None, members=None, **kwargs):
        made = roving.put_project(path, quota, members, ADMIN, T0, **kwargs)
        holder["paths"].add(path)
        if members is not None:
            holder["members"][path] = set(members)
        return made

    return roving, org, put


def test_projects_nest_by_path_and_a_child_needs_its_parent(world):
    roving, _, put = world
    with pytest.raises(Invalid, match="project physics does not exist; make it first"):
        put("physics/lattice")
    assert put("physics", {"cpu": 8}, ["alice"]) is True
    assert put("physics/lattice", {"cpu": 4}) is True
    assert put("physics", {"cpu": 16}) is False  # changed, not made
    with pytest.raises(Conflict, match="project physics already exists"):
        put("physics", create_only=True)


def test_bad_paths_quotas_and_unknown_members_are_refused_naming_the_field(world):
    _, _, put = world
    with pytest.raises(Invalid) as bad:
        put("Physics")
    assert bad.value.problems[0].path == "path"
    with pytest.raises(Invalid) as bad:
        put("physics", {"cpu": -1})
    assert bad.value.problems[0].path == "quota.cpu"
    with pytest.raises(Invalid) as bad:
        put("physics", {"gpus": 1})
    assert bad.value.problems[0].path == "quota.gpus"
    with pytest.raises(Invalid) as bad:
        put("physics", {}, ["alice", "mallory"])
    assert (bad.value.problems[0].path, bad.value.problems[0].message) == ("members[1]", "no user named 'mallory'")


def test_only_cluster_admins_make_projects():
    with pytest.raises(Forbidden, match="cluster admins only"):
        app().put_project("physics", {"cpu": 1}, [], user(), T0)


def test_open_mode_until_a_project_exists_then_work_must_name_one(world):
    roving, org, put = world
    alice = user(org, "alice")
    roving.submit_workflow(uuid4(), "w", fuzzfile(), 0, None, alice, T0)
    put("physics", {}, ["alice"])
    with pytest.raises(Invalid) as refused:
        roving.submit_workflow(uuid4(), "w", fuzzfile(), 0, None, alice, T0)
    assert refused.value.problems[0].path == "project"
    assert "name one with `project:` or --project (your projects: physics)" in refused.value.problems[0].message


def test_work_runs_under_its_named_project_and_only_a_member_may_submit_there(world):
    roving, org, put = world
    put("physics", {}, ["alice"])
    wid = uuid4()
    roving.submit_workflow(wid, "w", fuzzfile("physics"), 0, None, user(org, "alice"), T0)
    assert roving.repository.get(wid).owner["project"] == "physics"
    with pytest.raises(Forbidden, match="not a member of project physics"):
        roving.submit_workflow(uuid4(), "w", fuzzfile("physics"), 0, None, user(org, "bob"), T0)
    with pytest.raises(Invalid, match="no project named chemistry"):
        roving.submit_workflow(uuid4(), "w", fuzzfile("chemistry"), 0, None, user(org, "alice"), T0)


def test_membership_is_not_inherited_by_child_projects(world):
    roving, org, put = world
    put("physics", {}, ["alice"])
    put("physics/lattice", {}, ["bob"])
    with pytest.raises(Forbidden):
        roving.submit_workflow(uuid4(), "w", fuzzfile("physics/lattice"), 0, None, user(org, "alice"), T0)


def test_the_project_option_stands_for_the_definitions_own(world):
    roving, org, put = world
    put("physics", {}, ["alice"])
    put("bio", {}, ["alice"])
    wid = uuid4()
    roving.submit_workflow(wid, "w", fuzzfile("physics"), 0, None, user(org, "alice"), T0, project="bio",
                           annotations={"roving.preset": "gpu"})
    workflow = roving.repository.get(wid)
    assert workflow.owner["project"] == "bio" and workflow.definition.annotations == {"roving.preset": "gpu"}


def test_a_groups_default_project_comes_before_the_clusters(world):
    roving, org, put = world
    put("physics", {}, ["alice"])
    put("common", {}, ["alice"])
    roving.change_config({"projects.default": "common"}, ADMIN, T0)
    lab = roving.create_group(org, "lab", ADMIN, T0)
    alice = user(org, "alice")
    first = uuid4()
    roving.submit_workflow(first, "w", fuzzfile(), 0, None, alice, T0)
    assert roving.repository.get(first).owner["project"] == "common"
    roving.set_group_project(lab, "physics", ADMIN, T0)
    in_lab = alice.__class__(**{**{f: getattr(alice, f) for f in alice.__struct_fields__}, "group_ids": frozenset({lab})})
    second = uuid4()
    roving.submit_workflow(second, "w", fuzzfile(), 0, None, in_lab, T0)
    assert roving.repository.get(second).owner["project"] == "physics"
    assert lab == group_id(org, "lab")


def test_work_that_can_never_fit_its_projects_quota_is_refused_naming_the_project(world):
    roving, org, put = world
    put("physics", {"cpu": 8}, ["alice"])
    put("physics/lattice", {}, ["alice"])
    wid = uuid4()
    with pytest.raises(Invalid) as refused:
        roving.submit_workflow(wid, "w", fuzzfile("physics/lattice", cores=12), 0, None, user(org, "alice"), T0)
    problem, = refused.value.problems
    assert problem.path == "jobs.train.resource"
    assert problem.message == "can never run under project physics's quota: it asks cpu 12, the quota is 8"
    assert wid not in roving.repository


def test_shared_resources_the_cluster_lacks_are_refused_at_submission(world):
    roving, org, _ = world
    alice = user(org, "alice")
    with pytest.raises(Invalid, match="this cluster has no shared resource ansys"):
        roving.submit_workflow(uuid4(), "w", fuzzfile(shared="ansys: 1"), 0, None, alice, T0)
    roving.change_config({"scheduler.sharedResources": {"ansys": 4}}, ADMIN, T0)
    with pytest.raises(Invalid) as refused:
        roving.submit_workflow(uuid4(), "w", fuzzfile(shared="ansys: 5"), 0, None, alice, T0)
    assert refused.value.problems[0].path == "jobs.train.resource.shared.ansys"
    assert refused.value.problems[0].message == "asks 5 of shared resource ansys; the cluster has 4"


def register(roving, name="node-1", cpu=16):
    return roving.register_node(name, cpu, 64 << 30, {}, {}, "pool-a", "127.0.0.1", 9100, T0)[0]


def test_a_placement_past_a_quota_is_refused_at_commit_and_an_end_gives_the_quota_back(world):
    roving, org, put = world
    put("physics", {"cpu": 4}, ["alice"])
    node = register(roving)
    first, second = uuid4(), uuid4()
    for wid in (first, second):
        roving.submit_workflow(wid, "w", fuzzfile("physics", cores=3), 0, None, user(org, "alice"), T0)
    a, b = allocation_id(first, "train", 1), allocation_id(second, "train", 1)
    fence = roving.place(a, [node], "scheduler", later(1))
    assert roving.repository.get(ledger_id(PROJECT, "physics")).used == {"cpu": 3}
    with pytest.raises(Conflict, match="project physics's quota of cpu: 3 in use \\+ 3 asked > 4"):
        roving.place(b, [node], "scheduler", later(2))
    assert set(roving.allocations.on_node(node)) == {str(a)}  # nothing of the refused placement landed
    roving.report(node, a, fence, "exited", 0, "", later(3))
    assert roving.repository.get(ledger_id(PROJECT, "physics")).used == {}
    roving.place(b, [node], "scheduler", later(4))


def test_a_licence_is_never_placed_twice_and_a_stopped_workflow_gives_it_back(world):
    roving, org, _ = world
    roving.change_config({"scheduler.sharedResources": {"ansys": 1}}, ADMIN, T0)
    node = register(roving)
    first, second = uuid4(), uuid4()
    alice = user(org, "alice")
    for wid in (first, second):
        roving.submit_workflow(wid, "w", fuzzfile(shared="ansys: 1"), 0, None, alice, T0)
    roving.place(allocation_id(first, "train", 1), [node], "scheduler", later(1))
    with pytest.raises(Conflict, match="shared resource ansys: 1 in use \\+ 1 asked > 1"):
        roving.place(allocation_id(second, "train", 1), [node], "scheduler", later(2))
    roving.stop_workflow(first, alice, later(3))
    assert roving.repository.get(ledger_id(SHARED, "ansys")).held == {}
    roving.place(allocation_id(second, "train", 1), [node], "scheduler", later(4))


def test_a_deleted_project_with_children_is_refused_and_one_without_is_gone(world):
    roving, _, put = world
    put("physics")
    put("physics/lattice")
    with pytest.raises(Conflict, match="has child projects \\(physics/lattice\\)"):
        roving.delete_project("physics", ADMIN, T0)
    roving.delete_project("physics/lattice", ADMIN, T0)
    with pytest.raises(NotFound):
        roving.change_project("physics/lattice", ADMIN, T0, add=["alice"])
