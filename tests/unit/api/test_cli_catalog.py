"""`roving catalog`: sources added and listed, templates searched and shown by display category, `render NAME --values
FILE` printing the server's Fuzzfile, `start` submitting it; bad values files exit 2 before asking the server."""

import contextlib
import io
import json

import pytest
import yaml

from api.cli.main import build_parser, execute
from tests.catalog_fixtures import reference_folder, write_app
from tests.unit.api.harness import Api
from tests.unit.api.test_cli import client_for, run


@pytest.fixture(scope="module")
def api(tmp_path_factory):
    api = Api()
    root = tmp_path_factory.mktemp("catalog")
    code, out, err = run_admin(api, ["catalog", "source", "add", "reference",
                                     str(reference_folder(root / "ref", "hello_world", "rclone-server")),
                                     "--scope", "cluster"])
    assert code == 0, err
    write_app(root / "apps", "greeter")
    assert run_admin(api, ["catalog", "source", "add", "apps", str(root / "apps"), "--scope", "cluster"])[0] == 0
    return api


def run_admin(api, argv):
    """For the module's fixture, which has no capsys: the exit code, its output and its errors."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = execute(build_parser().parse_args(argv), client_for(api, api.admin))
    return code, out.getvalue(), err.getvalue()


def test_source_list_shows_the_sources(api, capsys):
    code, out, _ = run(api, api.admin, ["catalog", "source", "list"], capsys)
    assert code == 0 and out.split("\n")[0].split()[:3] == ["NAME", "SCOPE", "OWNER"]
    assert {line.split()[0] for line in out.splitlines()[1:]} == {"reference", "apps"}


def test_list_searches_descriptions_and_tags(api, capsys):
    code, out, _ = run(api, api.admin, ["catalog", "list", "hello", "-o", "json"], capsys)
    assert code == 0 and [t["key"] for t in json.loads(out)["templates"]] == ["apps/greeter", "reference/hello_world"]
    code, out, _ = run(api, api.admin, ["catalog", "list", "shell"], capsys)
    assert [line.split()[0] for line in out.splitlines()[1:]] == ["apps/greeter"]


def test_show_prints_the_inputs_under_their_display_categories(api, capsys):
    code, out, _ = run(api, api.admin, ["catalog", "show", "hello_world"], capsys)
    assert code == 0
    assert [line for line in out.splitlines() if line.startswith("[")] == ["[Container]", "[Execution]",
                                                                         "[Resources]", "[Commands]"]


def test_render_prints_the_fuzzfile_with_the_values_file_and_set(api, capsys, tmp_path):
    values = tmp_path / "values.yaml"
    values.write_text("values:\n  - name: Cores\n    uint_value: 3\n")
    code, out, _ = run(api, api.admin, ["catalog", "render", "hello_world", "--values", str(values),
                                        "--set", "Memory=2GiB"], capsys)
    assert code == 0
    resource = yaml.safe_load(out)["jobs"]["helloworld"]["resource"]
    assert resource["cpu"]["cores"] == 3 and resource["memory"]["size"] == "2GiB"


def test_render_of_a_v1_template_prints_v4_and_warns(api, capsys):
    code, out, err = run(api, api.admin, ["catalog", "render", "reference/rclone-server"], capsys)
    assert code == 0 and yaml.safe_load(out)["version"] == "v4" and "warning: version:" in err


def test_a_value_the_template_does_not_take_exits_1_naming_it(api, capsys, tmp_path):
    values = tmp_path / "values.yaml"
    values.write_text("Colour: red\n")
    code, _, err = run(api, api.admin, ["catalog", "render", "hello_world", "--values", str(values)], capsys)
    assert code == 1 and "values.Colour" in err


def test_a_values_file_that_is_not_yaml_exits_2(api, capsys, tmp_path):
    values = tmp_path / "values.yaml"
    values.write_text("values: [unclosed\n")
    code, _, err = run(api, api.admin, ["catalog", "render", "hello_world", "--values", str(values)], capsys)
    assert code == 2 and "--values: not valid YAML" in err


def test_start_submits_a_workflow(api, capsys):
    code, out, _ = run(api, api.admin, ["catalog", "start", "greeter", "--set", "Greeting=hi", "--name", "g1",
                                        "-o", "json"], capsys)
    started = json.loads(out)
    assert code == 0 and started["name"] == "g1" and started["template"] == "apps/greeter"
    code, out, _ = run(api, api.admin, ["workflow", "describe", started["id"], "-o", "json"], capsys)
    assert json.loads(out)["name"] == "g1"


def test_source_remove_by_name(api, capsys, tmp_path):
    assert run(api, api.admin, ["catalog", "source", "add", "gone", str(write_app(tmp_path, "x")), "--scope",
                                "cluster"], capsys)[0] == 0
    assert run(api, api.admin, ["catalog", "source", "remove", "gone"], capsys)[0] == 0
    code, _, err = run(api, api.admin, ["catalog", "source", "remove", "gone"], capsys)
    assert code == 1 and "no catalog source 'gone'" in err
