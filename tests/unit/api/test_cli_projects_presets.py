"""`roving project` and `roving preset` against the in-process API: what an admin and a user would type and see."""

import httpx
import msgspec
import pytest
import yaml

from api.cli.client import Client
from api.cli.main import build_parser, execute
from tests.unit.api.harness import Api

JOB = """
version: v4
jobs:
  hello:
    image: {uri: docker://alpine}
    script: echo hello
"""


@pytest.fixture(scope="module")
def api(tmp_path_factory):
    api = Api()
    api.presets = tmp_path_factory.mktemp("server-presets")
    api.app.state.settings = msgspec.structs.replace(api.app.state.settings, presets_dir=api.presets)
    api.alice = api.organization_with_user("acme", "alice")[1]
    return api


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    return tmp_path / "roving" / "presets"


def client_for(api, bearer):
    def handle(request: httpx.Request) -> httpx.Response:
        headers = {k: v for k, v in request.headers.items() if k in ("content-type", "if-none-match")}
        answer = api.request(request.method, str(request.url), bearer, content=request.content, headers=headers)
        return httpx.Response(answer.status_code, headers=answer.headers, content=answer.content)
    return Client("http://roving.test", transport=httpx.MockTransport(handle))


def run(api, bearer, argv, capsys):
    code = execute(build_parser().parse_args(argv), client_for(api, bearer))
    captured = capsys.readouterr()
    out = "".join(line for line in captured.out.splitlines(True) if " request " not in line)
    return code, out, captured.err


def test_an_admin_makes_a_project_tree_and_a_member_lists_it(api, capsys):
    assert run(api, api.admin, ["project", "create", "physics", "--cpu", "8", "--memory", "64GiB",
                                "--device", "gpu=2", "--member", "alice"], capsys)[0] == 0
    code, _, err = run(api, api.admin, ["project", "create", "physics"], capsys)
    assert code == 1 and "project physics already exists" in err
    assert run(api, api.admin, ["project", "create", "physics/lattice", "--cpu", "4"], capsys)[0] == 0
    assert run(api, api.admin, ["project", "quota", "set", "physics", "--cpu", "16", "--device", "gpu=none"],
               capsys)[0] == 0
    code, out, _ = run(api, api.admin, ["project", "show", "physics", "-o", "json"], capsys)
    shown = yaml.safe_load(out)
    assert shown["quota"] == {"cpu": 16, "memory": 64 << 30} and shown["children"] == ["physics/lattice"]
    code, out, _ = run(api, api.alice, ["project", "list"], capsys)
    assert code == 0 and out.splitlines()[0].split() == ["PATH", "QUOTA", "USED", "RUNNING", "MEMBERS"]
    assert "physics" in out and "physics/lattice" not in out  # membership is not inherited, nor is seeing
    code, _, err = run(api, api.alice, ["project", "create", "mine"], capsys)
    assert code == 1 and "cluster admins only" in err


def test_bad_quota_options_exit_2_before_asking(api, capsys):
    code, _, err = run(api, api.admin, ["project", "create", "x", "--cpu", "many"], capsys)
    assert code == 2 and "--cpu: expected a whole number or none" in err


def test_members_grants_and_the_default_project(api, capsys):
    assert run(api, api.admin, ["project", "member", "add", "physics/lattice", "alice"], capsys)[0] == 0
    assert run(api, api.admin, ["project", "grant", "physics", "alice", "workflow:view"], capsys)[0] == 0
    code, out, _ = run(api, api.admin, ["project", "show", "physics", "-o", "json"], capsys)
    assert yaml.safe_load(out)["grants"] == {"alice": ["workflow:view"]}
    assert run(api, api.admin, ["project", "default", "physics"], capsys)[0] == 0
    code, _, err = run(api, api.admin, ["project", "member", "remove", "physics", "bob"], capsys)
    assert code == 1 and "members: bob is not a member of project physics" in err


def test_a_preset_pulled_from_the_server_starts_work_and_is_reported(api, home, capsys, tmp_path):
    (api.presets / "lattice.yaml").write_text("description: lattice runs\noptions:\n  project: physics/lattice\n"
                                              "  priority: -5\n")
    code, out, _ = run(api, api.alice, ["preset", "pull"], capsys)
    assert code == 0 and "saved" in out and (home / "lattice.yaml").exists()
    assert "unchanged" in run(api, api.alice, ["preset", "pull", "lattice"], capsys)[1]
    fuzzfile = tmp_path / "hello.yaml"
    fuzzfile.write_text(JOB)
    code, out, err = run(api, api.alice, ["workflow", "start", str(fuzzfile), "--preset", "lattice", "-o", "json"],
                         capsys)
    assert code == 0, err
    wid = yaml.safe_load(out)["id"]
    detail = api.request("GET", f"/v4/workflows/{wid}", api.alice).json()
    assert detail["owner"]["project"] == "physics/lattice"
    assert detail["annotations"]["roving.preset"] == "lattice"
    assert detail["annotations"]["roving.preset-digest"].startswith("sha256:")
    code, out, _ = run(api, api.alice, ["preset", "report", "lattice"], capsys)
    assert code == 0 and wid in out and out.split()[-1] == "yes"
    (api.presets / "lattice.yaml").write_text("options: {project: physics/lattice, priority: -9}\n")
    code, _, err = run(api, api.alice, ["preset", "pull", "lattice"], capsys)
    assert code == 1 and "a different preset lattice exists here" in err and "--as" in err
    assert run(api, api.alice, ["preset", "pull", "lattice", "--as", "lattice9"], capsys)[0] == 0
    assert yaml.safe_load((home / "lattice9.yaml").read_text())["options"]["priority"] == -9
    assert run(api, api.alice, ["preset", "pull", "lattice", "--force"], capsys)[0] == 0
    assert yaml.safe_load((home / "lattice.yaml.bak").read_text())["options"]["priority"] == -5
    code, out, _ = run(api, api.alice, ["preset", "report", "lattice"], capsys)
    assert out.split()[-1] == "no"  # started from content the preset no longer has


def test_the_command_line_wins_over_the_preset(api, home, capsys, tmp_path):
    home.mkdir(parents=True, exist_ok=True)
    (home / "low.yaml").write_text("options: {priority: -7, project: physics}\n")
    fuzzfile = tmp_path / "hello.yaml"
    fuzzfile.write_text(JOB)
    code, out, err = run(api, api.alice, ["workflow", "start", str(fuzzfile), "--preset", "low", "--priority", "-1",
                                          "--project", "physics/lattice", "-o", "json"], capsys)
    assert code == 0, err
    detail = api.request("GET", f"/v4/workflows/{yaml.safe_load(out)['id']}", api.alice).json()
    assert (detail["priority"], detail["owner"]["project"]) == (-1, "physics/lattice")


def test_export_and_import_round_trip_and_a_collision_needs_force(api, home, capsys, tmp_path):
    home.mkdir(parents=True, exist_ok=True)
    (home / "mine.yaml").write_text("description: mine\noptions: {preemptible: true}\n")
    shared = tmp_path / "shared.yaml"
    assert run(api, api.alice, ["preset", "export", "mine", "-f", str(shared)], capsys)[0] == 0
    assert run(api, api.alice, ["preset", "import", str(shared), "--as", "copy"], capsys)[0] == 0
    assert yaml.safe_load((home / "copy.yaml").read_text()) == {"description": "mine", "options": {"preemptible": True}}
    shared.write_text("name: mine\noptions: {preemptible: false}\n")
    code, _, err = run(api, api.alice, ["preset", "import", str(shared)], capsys)
    assert code == 1 and "a different preset mine exists here" in err
    assert run(api, api.alice, ["preset", "import", str(shared), "--force"], capsys)[0] == 0
    assert (home / "mine.yaml.bak").exists()


def test_a_bad_preset_file_is_named_with_its_field(api, home, capsys, tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("options: {priority: 5}\n")
    code, _, err = run(api, api.alice, ["preset", "import", str(bad)], capsys)
    assert code == 1 and "options.priority: a workflow's priority is a whole number of 0 or lower" in err
    (api.presets / "broken.yaml").write_text("options: [1, 2]\n")
    listed = api.request("GET", "/v4/presets", api.admin).json()
    assert "broken.yaml" in listed["broken"]
    assert "broken" not in api.request("GET", "/v4/presets", api.alice).json()
