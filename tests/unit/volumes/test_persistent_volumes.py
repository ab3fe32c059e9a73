"""Persistent volumes: a reference names the user's or the group's directory under the provisioner's root, bound at
submission with its owner's POSIX ids; what cannot be provided is refused (or warned about) naming the field."""

from __future__ import annotations

from uuid import uuid4

import pytest

from domain.app import Invalid, Roving
from domain.tenancy import Role
from domain.tenancy.permissions import Principal
from domain.volumes import GROUP_MODE, USER_MODE, Reference, parse_reference
from tests.unit.app.builders import ADMIN, T0, later

ROOT = "/srv/roving/volumes"
PASSWORD = "A long passphrase 42!"
USES = """
version: v4
volumes:
  data: {{reference: {reference}}}
jobs:
  write:
    image: {{uri: docker://alpine}}
    script: date > data/stamp
    mounts: {{/data: {{volume: data}}}}
"""


class FastHasher:
    """A stored shape the User accepts, without scrypt's cost."""

    def hash(self, password: str) -> str:
        return "test$1$1$" + password.replace(" ", "_")

    def verify(self, password: str, stored: str) -> bool:
        return stored == self.hash(password)


def app() -> Roving:
    return Roving(env={"PERSISTENCE_MODULE": "eventsourcing.popo", "ROVING_CLUSTER": "test",
                       "TRANSCODER_TOPIC": "adapters.transcoder:MsgspecTranscoder"}, passwords=FastHasher())


def tenant(roving: Roving, grouped: bool = True) -> tuple[str, Principal]:
    """An organization with alice (uid 100000), in group physics (gid 200000) when `grouped`."""
    org = roving.create_organization("acme", ADMIN, T0)
    alice = roving.create_user(org, "alice", "alice@example.org", PASSWORD, "user", ADMIN, T0)
    groups: frozenset = frozenset()
    if grouped:
        group = roving.create_group(org, "physics", ADMIN, T0)
        roving.add_member(group, alice, "member", ADMIN, T0)
        groups = frozenset({group})
    return str(org), Principal(user_id=alice, username="alice", role=Role.USER, organization_id=org, group_ids=groups)


def provisioned(**settings) -> Roving:
    roving = app()
    roving.change_config({"storage.local.root": ROOT, **settings}, ADMIN, T0)
    return roving


def submit(roving: Roving, who: Principal, reference: str):
    workflow_id = uuid4()
    warnings = roving.submit_workflow(workflow_id, "wf", USES.format(reference=reference), 0, None, who, later(1))
    return roving.repository.get(workflow_id), warnings


@pytest.mark.parametrize(("text", "parsed"), [
    ("volume://user/ephemeral", Reference("user", "ephemeral")),
    ("volume://user/persistent", Reference("user", "persistent")),
    ("volume://user/persistent/cache", Reference("user", "persistent", "cache")),
    ("volume://group/persistent/shared", Reference("group", "persistent", "shared")),
])
def test_a_reference_names_its_scope_class_and_volume(text, parsed):
    assert parse_reference(text) == parsed


@pytest.mark.parametrize(("text", "message"), [
    ("s3://bucket", "a volume reference looks like volume://"),
    ("volume://org/persistent", "expected volume://user/CLASS[/NAME]"),
    ("volume://group/persistent", "a group volume needs a name"),
    ("volume://user/persistent/..", "may hold only letters"),
    ("volume://user/persistent/a/b", "expected volume://user/CLASS[/NAME]"),
])
def test_a_malformed_reference_says_what_a_reference_looks_like(text, message):
    assert message in parse_reference(text)


def test_the_users_persistent_volume_is_their_directory_under_the_root_with_mode_0700():
    roving = provisioned()
    org, alice = tenant(roving)
    workflow, warnings = submit(roving, alice, "volume://user/persistent")
    assert workflow.volume_bindings["data"] == {"reference": "volume://user/persistent",
                                                "path": f"{ROOT}/{org}/user/100000", "uid": 100000, "gid": 100000,
                                                "mode": USER_MODE, "segment": ""}
    assert not [w for w in warnings if w.path.startswith("volumes.")]


def test_a_group_volume_belongs_to_the_workflows_group_with_mode_2770():
    roving = provisioned()
    org, alice = tenant(roving)
    workflow, _ = submit(roving, alice, "volume://group/persistent/shared")
    binding = workflow.volume_bindings["data"]
    assert (binding["path"], binding["uid"], binding["gid"], binding["mode"]) == (
        f"{ROOT}/{org}/group/200000/shared", 100000, 200000, GROUP_MODE)


def test_a_group_volume_is_refused_for_a_user_in_no_group_naming_the_field():
    roving = provisioned()
    _, loner = tenant(roving, grouped=False)
    with pytest.raises(Invalid) as refused:
        submit(roving, loner, "volume://group/persistent/shared")
    problem, = refused.value.problems
    assert problem.path == "volumes.data.reference" and "member of no group" in problem.message


def test_without_a_provisioner_a_persistent_reference_runs_ephemeral_with_a_warning():
    roving = app()
    _, alice = tenant(roving)
    workflow, warnings = submit(roving, alice, "volume://user/persistent")
    assert workflow.volume_bindings == {}
    warned = {w.path: w.message for w in warnings}
    assert "storage.local.root is not set" in warned["volumes.data.reference"]
    assert "runs as volume://user/ephemeral" in warned["volumes.data.reference"]


def test_an_unknown_storage_class_is_warned_about_naming_the_classes_there_are():
    roving = provisioned(**{"storage.classes": {"scratch": {}}})
    _, alice = tenant(roving)
    workflow, warnings = submit(roving, alice, "volume://user/nvme")
    assert workflow.volume_bindings == {}
    message = {w.path: w.message for w in warnings}["volumes.data.reference"]
    assert "no storage class 'nvme' (this cluster has persistent, scratch)" in message


@pytest.mark.parametrize(("settings", "key", "reason"), [
    ({"storage.local.root": "relative/dir"}, "storage.local.root", "expected an absolute directory"),
    ({"storage.classes": {"fast": {"driver": "ceph"}}}, "storage.classes", "driver 'ceph' does not exist"),
    ({"storage.classes": {"fast": {"speed": 3}}}, "storage.classes", "expected {segment: SEGMENT"),
])
def test_a_bad_storage_setting_is_refused_naming_the_key(settings, key, reason):
    with pytest.raises(Invalid) as refused:
        app().change_config(settings, ADMIN, T0)
    assert any(p.path == key and reason in p.message for p in refused.value.problems), refused.value.problems


def test_a_group_volume_is_refused_for_a_submitter_no_longer_in_the_group_naming_the_field():
    roving = provisioned()
    _, alice = tenant(roving)
    group, = alice.group_ids
    roving.remove_member(group, alice.user_id, ADMIN, later(1))  # her token still names the group
    with pytest.raises(Invalid) as refused:
        submit(roving, alice, "volume://group/persistent/shared")
    problem, = refused.value.problems
    assert problem.path == "volumes.data.reference"
    assert "alice is not a member of group physics" in problem.message


def test_each_storage_class_is_a_directory_of_its_own_and_persistent_keeps_its_layout():
    roving = provisioned(**{"storage.classes": {"nvme": {}}})
    org, alice = tenant(roving)
    fast, _ = submit(roving, alice, "volume://user/nvme/cache")
    plain, _ = submit(roving, alice, "volume://user/persistent/cache")
    assert fast.volume_bindings["data"]["path"] == f"{ROOT}/{org}/class/nvme/user/100000/cache"
    assert plain.volume_bindings["data"]["path"] == f"{ROOT}/{org}/user/100000/cache"


def test_the_unnamed_volume_made_first_as_a_named_ones_parent_becomes_its_owners(tmp_path):
    """`volume://user/persistent/data` first makes `user/<uid>` (root's, searchable only); the unnamed
    `volume://user/persistent` is that directory, and must then be its owner's to be written."""
    import os

    from adapters.volumes import make_persistent
    from domain.volumes import Binding

    if os.geteuid() != 0:
        pytest.skip("giving a directory to another uid needs root (CI runs as root)")
    user_root = tmp_path / "acme" / "user" / "100000"
    make_persistent(Binding(reference="r", path=str(user_root / "data"), uid=100000, gid=100000, mode=USER_MODE),
                    as_root=True)
    assert user_root.stat().st_uid == 0  # the named volume's parent: root's
    made = make_persistent(Binding(reference="r", path=str(user_root), uid=100000, gid=100000, mode=USER_MODE),
                           as_root=True)
    assert (made.stat().st_uid, made.stat().st_mode & 0o7777) == (100000, USER_MODE)
