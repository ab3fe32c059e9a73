"""`POST /v4/workflows:validate` and `roving workflow validate`: what submission would refuse and what this cluster
would not do as written, each naming its field, without submitting anything."""

from __future__ import annotations

import pytest

from tests.unit.api.harness import Api
from tests.unit.api.test_cli import run

FUZZFILE = """
version: v4
volumes:
  data: {reference: volume://user/nvme}
  scratch: {reference: volume://user/ephemeral}
jobs:
  render:
    image: {uri: docker://alpine}
    script: echo render
    mounts: {/data: {volume: data}, /scratch: {volume: scratch}}
    resource: {cpu: {cores: 2, affinity: CORE}}
"""


@pytest.fixture(scope="module")
def api():
    return Api()


@pytest.fixture(scope="module")
def alice(api):
    return api.organization_with_user("acme", "alice")[1]


def validate(api, token, text):
    return api.request("POST", "/v4/workflows:validate", token, content=text,
                       headers={"Content-Type": "application/yaml"})


def test_validate_warns_about_what_this_cluster_will_not_do_naming_each_field(api, alice):
    answer = validate(api, alice, FUZZFILE)
    assert answer.status_code == 200, answer.text
    found = answer.json()
    warned = {w["path"]: w["message"] for w in found["warnings"]}
    assert found["valid"] is True and found["errors"] == []
    assert "no storage provisioner (storage.local.root is not set)" in warned["volumes.data.reference"]
    assert "runs as volume://user/ephemeral" in warned["volumes.data.reference"]
    assert warned["jobs.render.resource.cpu.affinity"].startswith("ignored:")
    assert "volumes.scratch.reference" not in warned
    assert api.request("GET", "/v4/workflows", alice).json()["workflows"] == []  # nothing was submitted


def test_validate_names_an_unknown_storage_class_once_a_provisioner_is_set(api, alice):
    changed = api.request("PUT", "/v4/admin/centralconfig", api.admin,
                          json={"storage.local.root": "/srv/roving/volumes", "storage.classes": {"fast": {}}})
    assert changed.status_code == 200, changed.text
    try:
        warned = {w["path"]: w["message"] for w in validate(api, alice, FUZZFILE).json()["warnings"]}
        assert "no storage class 'nvme' (this cluster has fast, persistent)" in warned["volumes.data.reference"]
        fine = validate(api, alice, FUZZFILE.replace("user/nvme", "user/fast")).json()
        assert "volumes.data.reference" not in {w["path"] for w in fine["warnings"]}
    finally:
        api.request("PUT", "/v4/admin/centralconfig", api.admin,
                    json={"storage.local.root": None, "storage.classes": None})


def test_validate_answers_errors_with_200_and_valid_false(api, alice):
    found = validate(api, alice, FUZZFILE.replace("volume://user/nvme", "volume://group/persistent")).json()
    assert found["valid"] is False
    assert [e["path"] for e in found["errors"]] == ["volumes.data.reference"]
    assert "a group volume needs a name" in found["errors"][0]["message"]


def test_the_cli_prints_the_clusters_warnings_and_exits_0(api, alice, capsys, tmp_path):
    path = tmp_path / "render.yaml"
    path.write_text(FUZZFILE)
    code, _, err = run(api, alice, ["workflow", "validate", str(path)], capsys)
    assert code == 0
    assert "warning: volumes.data.reference: volume://user/nvme: this cluster has no storage provisioner" in err
    code, _, err = run(api, alice, ["workflow", "validate", "--offline", str(path)], capsys)
    assert code == 0 and "volumes.data.reference" not in err and "cpu.affinity" in err


def test_validate_for_another_cluster_is_refused_naming_the_cluster(api, alice):
    other = api.request("POST", "/v4/workflows:validate?cluster=elsewhere", alice, json={"definition": FUZZFILE})
    assert other.status_code == 400 and other.json()["errors"][0]["path"] == "cluster"
    assert "this control plane is cluster 'test'" in other.json()["error"]
    same = api.request("POST", "/v4/workflows:validate?cluster=test", alice, json={"definition": FUZZFILE})
    assert same.status_code == 200 and same.json()["valid"] is True


def test_validate_refuses_a_key_given_twice_naming_both_lines(api, alice):
    text = FUZZFILE.replace("    script: echo render\n", "    script: echo render\n    script: echo again\n")
    found = validate(api, alice, text).json()
    assert found["valid"] is False
    [error] = found["errors"]
    assert "duplicate key `script`" in error["message"] and "line 9" in error["message"] and "line 10" in error["message"]


def test_the_cli_names_invalid_yaml_without_an_empty_field(api, alice, capsys, tmp_path):
    path = tmp_path / "broken.yaml"
    path.write_text("version: v4\njobs: [unclosed\n")
    code, _, err = run(api, alice, ["workflow", "validate", str(path)], capsys)
    assert code == 1
    assert err.startswith("error: not valid YAML: line 3") and "error: :" not in err

