"""Volume provisioners, pure and through the application: a storage class made by an admin's program, a volume
asked once per owner and organization however often it is asked, the stages that mount it held with a reason
until the program answers, then bound to its directory, or their workflow ended with the program's reason."""

from __future__ import annotations

from uuid import uuid4

import pytest

from adapters.volumes import make_persistent
from domain.agent_start import PersistentVolume
from domain.app import Forbidden, Invalid
from domain.scheduler import Reason, SchedulerConfig, schedule
from domain.storage_provisioner import State, StorageError, StorageProvisioners, Volume, volume_request
from domain.storage_provisioner_spec import StorageBody, path_problem, to_spec
from domain.tenancy import Role
from domain.tenancy.permissions import Principal
from tests.unit.app.builders import ADMIN, T0, later
from tests.unit.scheduler.builders import job, node, snap
from tests.unit.volumes.test_persistent_volumes import USES, app, tenant

LUSTRE = StorageBody(storage_class="lustre", program="/opt/site/make-volume", root="/lustre/roving")


def spec():
    made, problems = to_spec(LUSTRE)
    assert made is not None, problems
    return made


def volume(request: str = "r1") -> Volume:
    return Volume(request=request, provisioner="lustre", storage_class="lustre", reference="volume://user/lustre/d",
                  organization="acme", scope="user", name="d", uid=100000, gid=100000, mode=0o700,
                  state=State.REQUESTED, requested_at=T0)


def defined() -> StorageProvisioners:
    found = StorageProvisioners.start(at=T0)
    found.define("lustre", spec(), by="admin", at=T0)
    return found


def test_a_volume_asked_by_two_workflows_is_one_request_both_wait_on_and_ready_gives_its_directory():
    found = defined()
    found.ask(volume(), "wf-1", at=T0)
    asked = found.ask(volume(), "wf-2", at=later(1))
    assert (asked.state, asked.waiting, len(found.pending())) == (State.REQUESTED, ("wf-1", "wf-2"), 1)
    before = found.ready("r1", "/lustre/roving/acme/d", at=later(2))
    assert before.waiting == ("wf-1", "wf-2")
    again = found.ask(volume(), "wf-3", at=later(3))
    assert (again.state, again.path, again.waiting, found.pending()) == (State.READY, "/lustre/roving/acme/d", (), [])


def test_a_failed_volume_keeps_the_programs_reason_and_is_asked_again_by_the_next_workflow():
    found = defined()
    found.ask(volume(), "wf-1", at=T0)
    found.fail("r1", "quota exceeded for project acme", at=later(1))
    assert (found.volumes["r1"].state, found.volumes["r1"].reason) == (State.FAILED, "quota exceeded for project acme")
    retried = found.ask(volume(), "wf-2", at=later(2))
    assert (retried.state, retried.attempts, retried.waiting) == (State.REQUESTED, 2, ("wf-2",))
    found.ready("r1", "/lustre/roving/acme/d", at=later(3))
    with pytest.raises(StorageError, match="is READY, not REQUESTED"):  # answered once: a late second answer is moot
        found.fail("r1", "late", at=later(4))


def test_the_same_volume_of_another_organization_or_owner_is_another_request():
    mine = volume_request("acme", "user", 100000, "lustre", "d")
    assert mine == volume_request("acme", "user", 100000, "lustre", "d")
    assert mine != volume_request("globex", "user", 100000, "lustre", "d")
    assert mine != volume_request("acme", "user", 100001, "lustre", "d")
    assert mine != volume_request("acme", "group", 100000, "lustre", "d")


def test_a_storage_class_is_made_by_one_provisioner_and_never_the_local_ones():
    found = defined()
    with pytest.raises(StorageError, match="made by volume provisioner lustre"):
        found.define("other", spec(), by="admin", at=T0)
    _, problems = to_spec(StorageBody(storage_class="persistent", program="relative", root="/"))
    assert {p.path for p in problems} == {"class", "program", "root"}


@pytest.mark.parametrize("answer", ["/lustre/roving", "/lustre/roving/../etc", "/etc/passwd", "relative", None, ""])
def test_a_directory_outside_the_admins_root_is_refused(answer):
    assert path_problem(answer, "/lustre/roving") is not None
    assert path_problem("/lustre/roving/acme/user/100000/d", "/lustre/roving") is None


def test_deleting_a_provisioner_fails_the_volumes_it_was_still_making():
    found = defined()
    found.ask(volume(), "wf-1", at=T0)
    failed = found.remove("lustre", by="admin", at=later(1))
    assert [(v.request, v.waiting) for v in failed] == [("r1", ())]
    assert found.volumes["r1"].reason == "volume provisioner lustre was deleted" and found.classes() == {}


def test_a_stage_whose_volume_is_being_provisioned_is_held_with_that_reason_while_the_other_runs():
    held = job("write", provisioning="volume data is being provisioned by lustre")
    decisions = schedule(snap([held, job("other")], nodes=[node("n1")]), SchedulerConfig(), T0)
    why = decisions.reasons["write"]
    assert (why.reason, why.message) == (Reason.WAITING_FOR_VOLUME, "volume data is being provisioned by lustre")
    assert [p.allocation_id for p in decisions.placements] == ["other"]


# through the application (in memory)

def application():
    roving = app()
    roving.set_volume_provisioner("lustre", LUSTRE, ADMIN, T0)
    return roving


def submit(roving, who, reference="volume://user/lustre/data"):
    workflow_id = uuid4()
    roving.submit_workflow(workflow_id, "wf", USES.format(reference=reference), 0, None, who, later(1))
    return workflow_id


def test_only_cluster_admins_define_volume_provisioners():
    roving = app()
    _, alice = tenant(roving)
    with pytest.raises(Forbidden):
        roving.set_volume_provisioner("lustre", LUSTRE, alice, T0)
    with pytest.raises(Invalid) as refused:
        roving.set_volume_provisioner("lustre", StorageBody(storage_class="lustre", program="/p", root="/"), ADMIN, T0)
    assert [p.path for p in refused.value.problems] == ["root"]


def test_a_submission_waits_for_its_volume_then_is_bound_to_the_directory_the_program_answered():
    roving = application()
    org, alice = tenant(roving)
    first, second = submit(roving, alice), submit(roving, alice)
    store = roving.volume_provisioners.find()
    assert store is not None and len(store.pending()) == 1
    request = store.pending()[0]
    assert (request.organization, request.uid, request.waiting) == (org, 100000, (str(first), str(second)))
    pending = roving.repository.get(first).volume_bindings["data"]
    assert (pending["path"], pending["provisioner"]) == ("", "lustre")
    assert roving.volume_ready(request.request, "/lustre/roving/x", later(2))
    for workflow in (first, second):
        assert roving.repository.get(workflow).volume_bindings["data"]["path"] == "/lustre/roving/x"
    third = submit(roving, alice)  # ready: bound at once, nothing asked
    assert roving.repository.get(third).volume_bindings["data"]["path"] == "/lustre/roving/x"
    assert roving.volume_provisioners.find().pending() == []


def test_a_failed_volume_ends_the_workflows_waiting_for_it_with_the_programs_reason():
    roving = application()
    _, alice = tenant(roving)
    waiting = submit(roving, alice)
    request = roving.volume_provisioners.find().pending()[0].request
    assert roving.volume_failed(request, "its program exited 3: quota exceeded", later(2))
    workflow = roving.repository.get(waiting)
    assert workflow.status == "CANCELED"
    assert workflow.canceled_reason == ("volume volume://user/lustre/data could not be provisioned by lustre: its "
                                        "program exited 3: quota exceeded")


def test_a_group_volume_is_the_groups_one_request_and_another_organizations_is_its_own():
    roving = application()
    _, alice = tenant(roving)
    first = submit(roving, alice, "volume://group/lustre/shared")
    org = roving.create_organization("globex", ADMIN, T0)
    bob = roving.create_user(org, "bob", "bob@example.org", "A long passphrase 42!", "user", ADMIN, T0)
    group = roving.create_group(org, "physics", ADMIN, T0)
    roving.add_member(group, bob, "member", ADMIN, T0)
    other = Principal(user_id=bob, username="bob", role=Role.USER, organization_id=org, group_ids=frozenset({group}))
    second = submit(roving, other, "volume://group/lustre/shared")
    pending = roving.volume_provisioners.find().pending()
    assert [(v.organization, v.scope, v.waiting) for v in pending] == [
        (roving.repository.get(first).owner["organization_id"], "group", (str(first),)), (str(org), "group", (str(second),))]
    assert pending[0].gid != pending[1].gid and pending[0].mode == 0o2770
    roving.volume_ready(pending[0].request, "/lustre/roving/acme/shared", later(2))
    assert roving.repository.get(second).volume_bindings["data"]["path"] == ""  # never the other organization's


def test_a_node_without_the_provisioners_directory_refuses_to_start_rather_than_make_one_on_its_own_disk(tmp_path):
    missing = tmp_path / "lustre" / "acme" / "d"
    with pytest.raises(FileNotFoundError, match="is not on this node"):
        make_persistent(PersistentVolume(str(missing), 100000, 100000, 0o700, made=True), as_root=False)
    assert not (tmp_path / "lustre").exists()
    missing.mkdir(parents=True)
    assert make_persistent(PersistentVolume(str(missing), 100000, 100000, 0o700, made=True), as_root=False) == missing
