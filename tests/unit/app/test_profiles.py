"""Application profiles through the application: admins set them, jobs are bound to them at submission, and a
start under a profile that moved is refused while the stage stays queued."""

from __future__ import annotations

from uuid import uuid4

import pytest

from domain.allocation import QueueState
from domain.app import Conflict, Forbidden, Invalid, NotFound
from domain.app.ids import allocation_id
from domain.profiles import ProfileBody
from tests.unit.app.builders import ADMIN, T0, app, later, user

GPU = ProfileBody(env={"MODEL_DIR": "/models", "OMP_NUM_THREADS": "8"},
                  resource={"cpu": {"cores": 2}, "memory": {"size": "1GiB"}, "devices": {"nvidia.com/gpu": 0}},
                  annotations={"site": "a"}, pre="echo warm", post="echo done", hook_timeout="30s")


def job(extra: str = "", step: str = "train") -> str:
    return (f"version: v4\njobs:\n  {step}:\n    image: {{uri: docker://alpine}}\n    script: echo hi\n"
            f"    profile: gpu\n{extra}")


def submitted(roving, text: str, owner=None):
    wid = uuid4()
    roving.submit_workflow(wid, "w", text, 0, None, owner or user(), T0)
    return wid, roving.repository.get(wid)


def refusal(roving, text: str) -> list[tuple[str, str]]:
    with pytest.raises(Invalid) as refused:
        submitted(roving, text)
    return [(p.path, p.message) for p in refused.value.problems]


def test_only_a_cluster_admin_sets_or_deletes_a_profile_and_every_user_reads_it():
    roving = app()
    with pytest.raises(Forbidden, match="cluster admins only"):
        roving.set_profile("gpu", GPU, user(), T0)
    answer = roving.set_profile("gpu", GPU, ADMIN, T0)
    assert answer["revision"] == 1 and answer["env"]["MODEL_DIR"] == "/models"
    assert roving.profile("gpu", user())["hook_timeout"] == "30s"
    assert [p["name"] for p in roving.list_profiles(user())] == ["gpu"]
    with pytest.raises(Forbidden):
        roving.delete_profile("gpu", user(), T0)
    roving.delete_profile("gpu", ADMIN, T0)
    with pytest.raises(NotFound):
        roving.profile("gpu", user())
    assert roving.list_profiles(user()) == []


def test_a_profile_holds_no_secrets_and_names_each_bad_field():
    body = ProfileBody(env={"DB_PASSWORD": "x", "API_TOKEN": "y", "HF": "secret://user/hf"}, hook_timeout="forever",
                       resource={"cpu": {"cores": 0}})
    with pytest.raises(Invalid) as refused:
        app().set_profile("gpu", body, ADMIN, T0)
    paths = [p.path for p in refused.value.problems]
    assert paths == ["env.DB_PASSWORD", "env.API_TOKEN", "env.HF", "resource.cpu.cores", "hook_timeout"]
    assert "no secrets" in refused.value.problems[0].message


def test_setting_the_same_values_again_is_no_new_revision():
    roving = app()
    roving.set_profile("gpu", GPU, ADMIN, T0)
    assert roving.set_profile("gpu", GPU, ADMIN, later(1))["revision"] == 1


def test_a_bound_job_gets_the_profile_env_resources_annotations_and_hooks():
    roving = app()
    roving.set_profile("gpu", GPU, ADMIN, T0)
    wid, workflow = submitted(roving, job("    env: [EXTRA=1]\n    resource: {cpu: {cores: 1}}\n"))
    spec = workflow.stages["train"].spec
    assert spec.env == {"EXTRA": "1", "MODEL_DIR": "/models", "OMP_NUM_THREADS": "8"}
    assert (spec.resources.cpu_cores, spec.resources.memory_bytes) == (1, 1 << 30)  # fewer cores: its own wins
    assert spec.resources.devices == {} and spec.resources.annotations == {"site": "a"}
    assert [(h.when, h.source, h.script, h.timeout_seconds) for h in spec.hooks] == [
        ("pre", "profile gpu", "echo warm", 30.0), ("post", "profile gpu", "echo done", 30.0)]
    assert (spec.profile, spec.profile_revision) == ("gpu", 1)
    alloc = roving.repository.get(allocation_id(wid, "train", 1))
    assert (alloc.profile, alloc.profile_revision) == ("gpu", 1)


def test_a_job_may_not_change_a_profile_value_and_is_told_the_key_and_the_profile():
    roving = app()
    roving.set_profile("gpu", GPU, ADMIN, T0)
    problems = refusal(roving, job("    env: [OMP_NUM_THREADS=64]\n"))
    assert problems == [("jobs.train.env.OMP_NUM_THREADS",
                         "profile `gpu` sets this to '8'; a job may add to a profile, never change it (got '64')")]


def test_defaults_count_as_the_job_s_own_values():
    roving = app()
    roving.set_profile("gpu", GPU, ADMIN, T0)
    text = job().replace("jobs:", "defaults: {env: [MODEL_DIR=/tmp]}\njobs:")
    assert [path for path, _ in refusal(roving, text)] == ["jobs.train.env.MODEL_DIR"]


def test_resources_above_the_profile_and_devices_it_allows_none_of_are_refused():
    roving = app()
    roving.set_profile("gpu", GPU, ADMIN, T0)
    text = job("    resource: {cpu: {cores: 4}, memory: {size: 2GiB}, devices: {nvidia.com/gpu: 1}, "
               "annotations: {site: b}}\n")
    assert refusal(roving, text) == [
        ("jobs.train.resource.cpu.cores", "profile `gpu` allows at most 2; asked 4"),
        ("jobs.train.resource.memory.size", "profile `gpu` allows at most '1GiB'; asked '2GiB'"),
        ('jobs.train.resource.devices["nvidia.com/gpu"]', "profile `gpu` allows none; asked 1"),
        ("jobs.train.resource.annotations.site",
         "profile `gpu` sets this to 'a'; a job may add to a profile, never change it (got 'b')")]


def test_an_unknown_profile_is_refused_naming_it():
    assert refusal(app(), job()) == [("jobs.train.profile", "no profile is named `gpu`")]


def test_a_fuzzfile_cannot_forge_the_recorded_binding():
    problems = refusal(app(), job("    roving-profile: {name: gpu, revision: 9, digest: x}\n"))
    assert problems[0][0] == "jobs.train.roving-profile"


def test_a_profile_changed_after_submission_refuses_the_start_and_the_stage_stays_queued():
    roving = app()
    roving.set_profile("gpu", GPU, ADMIN, T0)
    node, _ = roving.register_node("n1", 8, 8 << 30, {}, {"site": "a"}, "pool", "127.0.0.1", 9100, T0)
    wid, _ = submitted(roving, job())
    roving.set_profile("gpu", ProfileBody(env={"MODEL_DIR": "/elsewhere"}), ADMIN, later(1))
    aid = allocation_id(wid, "train", 1)
    with pytest.raises(Conflict, match=r"profile `gpu` changed \(revision 1, now 2\)"):
        roving.place(aid, [node], "scheduler", later(2))
    assert roving.repository.get(aid).state is QueueState.READY
    assert roving.repository.get(wid).stages["train"].status.value == "READY"
    roving.set_profile("gpu", GPU, ADMIN, later(3))  # the values it was bound to again: it may start
    assert roving.place(aid, [node], "scheduler", later(4)) == 1


def test_a_deleted_profile_refuses_the_start_without_failing_the_stage():
    roving = app()
    roving.set_profile("gpu", GPU, ADMIN, T0)
    node, _ = roving.register_node("n1", 8, 8 << 30, {}, {"site": "a"}, "pool", "127.0.0.1", 9100, T0)
    wid, _ = submitted(roving, job())
    roving.delete_profile("gpu", ADMIN, later(1))
    with pytest.raises(Conflict, match="profile `gpu` was deleted"):
        roving.place(allocation_id(wid, "train", 1), [node], "scheduler", later(2))
    assert roving.repository.get(wid).status == "PENDING"
