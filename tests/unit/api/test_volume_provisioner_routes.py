"""Volume provisioners over HTTP and the CLI: cluster admins only (an org owner or a member is refused by the server
for every verb, reads included: volumes name other organizations), bad definitions refused naming the field, and
`roving volume provisioner create|list|show|delete`."""

from __future__ import annotations

import pytest

from tests.unit.api.harness import Api
from tests.unit.api.test_cli import run

LUSTRE = {"class": "lustre", "program": "/opt/site/make-volume", "root": "/lustre/roving"}


@pytest.fixture(scope="module")
def api():
    return Api()


@pytest.mark.parametrize("role", ["org_owner", "user"])
def test_nobody_but_a_cluster_admin_defines_reads_or_deletes_volume_provisioners(api, role):
    _, bearer = api.organization_with_user(f"org-{role.replace('_', '-')}", f"someone-{role.replace('_', '-')}", role)
    assert api.request("PUT", "/v4/volume-provisioners/lustre", bearer, json=LUSTRE).status_code == 403
    assert api.request("GET", "/v4/volume-provisioners", bearer).status_code == 403
    assert api.request("GET", "/v4/volume-provisioners/lustre", bearer).status_code == 403
    assert api.request("DELETE", "/v4/volume-provisioners/lustre", bearer).status_code == 403


@pytest.mark.parametrize(("body", "field"), [
    ({**LUSTRE, "root": "/"}, "root"),
    ({**LUSTRE, "root": "/lustre/../etc"}, "root"),
    ({**LUSTRE, "program": "make-volume"}, "program"),
    ({**LUSTRE, "class": "persistent"}, "class"),
    ({**LUSTRE, "timeoutSeconds": 0}, "timeoutSeconds"),
    ({"program": "/p", "root": "/lustre"}, "class"),
])
def test_a_bad_definition_is_refused_naming_its_field(api, body, field):
    answer = api.request("PUT", "/v4/volume-provisioners/bad", api.admin, json=body)
    assert answer.status_code in (400, 422), answer.text
    assert field in answer.text


def test_create_list_show_and_delete_a_volume_provisioner_with_the_cli(api, capsys):
    code, out, err = run(api, api.admin, ["volume", "provisioner", "create", "scratch", "--class", "scratch",
                                          "--program", "/opt/site/make-volume", "--root", "/scratch/roving",
                                          "--timeout", "2m"], capsys)
    assert code == 0, err
    assert "class: scratch" in out and "timeoutSeconds: 120.0" in out
    code, out, _ = run(api, api.admin, ["volume", "provisioner", "list"], capsys)
    header, *rows = out.splitlines()
    assert header.split() == ["NAME", "CLASS", "PROGRAM", "ROOT", "VOLUMES"]
    assert ["scratch", "scratch", "/opt/site/make-volume", "/scratch/roving", "-"] in [r.split() for r in rows]
    code, out, _ = run(api, api.admin, ["volume", "provisioner", "show", "scratch"], capsys)
    assert code == 0 and "root: /scratch/roving" in out
    code, out, err = run(api, api.admin, ["volume", "provisioner", "create", "other", "--class", "scratch",
                                          "--program", "/p", "--root", "/x"], capsys)
    assert code != 0 and "made by volume provisioner scratch" in err
    code, _, err = run(api, api.admin, ["volume", "provisioner", "create", "x", "--class", "c", "--program", "/p",
                                        "--root", "/x", "--timeout", "soon"], capsys)
    assert code == 2 and "--timeout" in err
    code, _, _ = run(api, api.admin, ["volume", "provisioner", "delete", "scratch"], capsys)
    assert code == 0
    assert api.request("GET", "/v4/volume-provisioners/scratch", api.admin).status_code == 404
