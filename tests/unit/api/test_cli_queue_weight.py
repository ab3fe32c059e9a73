"""`roving queue show` has a WEIGHT column: the organization/group/user/workflow priorities behind PRIORITY."""

import pytest

from tests.unit.api.harness import JOB, Api
from tests.unit.api.test_cli import run


@pytest.fixture(scope="module")
def api():
    return Api()


def test_queue_show_weight_is_org_group_user_workflow_priority(api, capsys, tmp_path):
    _, dora = api.organization_with_user("weights", "dora")
    assert run(api, api.admin, ["org", "priority", "weights", "4"], capsys)[0] == 0
    assert run(api, api.admin, ["user", "priority", "dora", "2"], capsys)[0] == 0
    fuzzfile = tmp_path / "hello.yaml"
    fuzzfile.write_text(JOB)
    assert run(api, dora, ["workflow", "start", str(fuzzfile), "--priority", "-1", "-o", "json"], capsys)[0] == 0
    code, out, _ = run(api, api.admin, ["queue", "show"], capsys)
    header, *rows = [line.split() for line in out.splitlines()]
    column = header.index("WEIGHT")
    [mine] = [r for r in rows if "dora" in r]
    assert code == 0 and mine[column] == "4/0/2/-1"
