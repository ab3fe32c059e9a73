"""Every one of the 42 reference catalog templates builds and renders through the catalog into a Fuzzfile that parses;
the v1 one comes back as v4, and optional secret and volume inputs left unset render without a crash."""

from datetime import UTC, datetime
from pathlib import Path

import pytest
import yaml

from domain.catalog import CatalogError, Clock, TemplateFiles, build, form_groups, matches, render_fuzzfile
from domain.fuzzfile import parse_fuzzfile
from tests.reference import fuzzball

CATALOG = fuzzball("catalog")
CLOCK = Clock(datetime(2025, 1, 1, tzinfo=UTC), lambda low, high: low)
REQUIRED = {  # what the shipped values files leave empty and the templates refuse to render without
    "NgcApiKeySecret": "secret://user/NGC_API_KEY",
    "NgcOciSecret": "secret://user/NGC_OCI_SECRET",
    "HuggingFaceTokenSecret": "secret://user/HF_TOKEN",
    "UserPassword": "a-password",
    "ServerApiKey": "an-api-key",
}
TEMPLATES = sorted(CATALOG.glob("*.template.yaml"))


def template(path: Path):
    name = path.name.removesuffix(".template.yaml")
    files = TemplateFiles(name, path.read_text(), (CATALOG / f"{name}.values.yaml").read_text())
    return build(files, "reference", "ref-id", "cluster")


def test_the_reference_catalog_has_42_templates():
    assert len(TEMPLATES) == 42


@pytest.mark.parametrize("path", TEMPLATES, ids=lambda p: p.name.removesuffix(".template.yaml"))
def test_a_reference_template_renders_into_a_v4_fuzzfile_that_parses(path):
    found = template(path)
    given = {name: value for name, value in REQUIRED.items() if any(i.name == name for i in found.inputs)}
    rendered = render_fuzzfile(found, given, CLOCK)
    assert yaml.safe_load(rendered.fuzzfile)["version"] == "v4"
    assert parse_fuzzfile(rendered.fuzzfile).errors == []


def test_the_v1_template_is_upgraded_server_side_with_the_upgrades_warnings():
    rendered = render_fuzzfile(template(CATALOG / "rclone-server.template.yaml"), {}, CLOCK)
    document = yaml.safe_load(rendered.fuzzfile)
    assert document["version"] == "v4"
    mounts = next(iter(document["jobs"].values()))["mounts"]
    assert all(set(m) == {"volume"} for m in mounts.values()) and all(p.startswith("/") for p in mounts)
    assert [w.path for w in rendered.warnings][:1] == ["version"]
    assert any(w.path.endswith(".mounts") for w in rendered.warnings)


def test_an_optional_secret_left_unset_renders_without_its_egress():
    blender = template(CATALOG / "blender.template.yaml")
    unset = render_fuzzfile(blender, {}, CLOCK)
    given = render_fuzzfile(blender, {"OutputS3Uri": "s3://results/out.mp4", "S3Secret": "secret://user/s3"}, CLOCK)
    volumes = {name: yaml.safe_load(r.fuzzfile)["volumes"]["scratch"] for name, r in (("unset", unset), ("given", given))}
    assert "egress" not in volumes["unset"] and volumes["given"]["egress"][0]["destination"]["secret"] == "secret://user/s3"


OPTIONAL_VOLUME = TemplateFiles("data", """version: v4
jobs:
  run:
    image: {uri: docker://alpine}
    command: [ls, /data]
    resource: {cpu: {cores: 1}, memory: {size: 1GiB}}
{{- if .Data }}
    mounts:
      /data: {volume: data}
volumes:
  data:
    reference: {{ .Data }}
{{- end }}
""", """values:
  - name: Data
    display_name: A volume to list (optional)
    volume_value:
      reference: ""
  - name: Token
    secret_value:
""")


def test_optional_volume_and_secret_inputs_left_unset_render_as_empty_and_skip_what_needs_them():
    found = build(OPTIONAL_VOLUME, "own", "id", "group")
    assert [(i.kind, i.default, i.optional_reference) for i in found.inputs] == [("volume", "", True),
                                                                                  ("secret", "", True)]
    assert "volumes" not in yaml.safe_load(render_fuzzfile(found, {}, CLOCK).fuzzfile)
    given = yaml.safe_load(render_fuzzfile(found, {"Data": "volume://user/persistent/inputs"}, CLOCK).fuzzfile)
    assert given["volumes"] == {"data": {"reference": "volume://user/persistent/inputs"}}


def test_a_volume_that_is_not_a_volume_reference_is_refused_naming_the_input():
    with pytest.raises(CatalogError, match="values.Data"):
        render_fuzzfile(build(OPTIONAL_VOLUME, "own", "id", "group"), {"Data": "/scratch"}, CLOCK)


def test_a_required_secret_left_unset_is_the_templates_own_message_at_values():
    with pytest.raises(CatalogError) as refused:
        render_fuzzfile(template(CATALOG / "nim_flux_webui.template.yaml"), {}, CLOCK)
    assert [(p.path, p.message) for p in refused.value.problems] == [("values", "NgcApiKeySecret is required")]


def test_bad_values_are_refused_each_at_its_field():
    hello = template(CATALOG / "hello_world.template.yaml")
    with pytest.raises(CatalogError) as refused:
        render_fuzzfile(hello, {"Cores": "many", "Colour": "red"}, CLOCK)
    assert sorted(p.path for p in refused.value.problems) == ["values.Colour", "values.Cores"]
    assert "whole number" in str(refused.value)


def test_a_malformed_secret_reference_is_refused_naming_the_input():
    with pytest.raises(CatalogError, match="values.S3Secret"):
        render_fuzzfile(template(CATALOG / "blender.template.yaml"), {"S3Secret": "s3-key"}, CLOCK)


def test_the_run_form_groups_inputs_by_display_category_in_first_seen_order():
    groups = form_groups(template(CATALOG / "hello_world.template.yaml"))
    assert list(groups) == ["Container", "Execution", "Resources", "Commands"]
    assert [i.name for i in groups["Resources"]] == ["Cores", "Memory"]


def test_search_looks_at_names_descriptions_and_input_descriptions():
    hello = template(CATALOG / "hello_world.template.yaml")
    assert matches(hello, "hello") and matches(hello, "HOSTNAME") is False and matches(hello, "memory cores")
    assert not matches(hello, "gromacs")
