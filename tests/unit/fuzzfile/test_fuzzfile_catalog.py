"""Given each v4 catalog template rendered with its values file, it parses and its stages match the YAML."""

from datetime import UTC, datetime
from pathlib import Path

import pytest
import yaml

from domain.catalog import Clock, fill, parse_inputs, render
from domain.fuzzfile import list_stages, parse_fuzzfile
from domain.fuzzfile.transfers import TRANSFER_KINDS
from tests.reference import fuzzball

CATALOG = fuzzball("catalog")
# Values a user must fill in before these templates render (the shipped values files leave them empty).
REQUIRED = {
    "NgcApiKeySecret": "secret://user/NGC_API_KEY",
    "NgcOciSecret": "secret://user/NGC_OCI_SECRET",
    "HuggingFaceTokenSecret": "secret://user/HF_TOKEN",
    "UserPassword": "a-password",
    "ServerApiKey": "an-api-key",
}
CLOCK = Clock(datetime(2025, 1, 1, tzinfo=UTC), lambda low, high: low)
TEMPLATES = sorted(p for p in CATALOG.glob("*.template.yaml") if "version: v4" in p.read_text())


def rendered(template: Path) -> str:
    inputs = parse_inputs((CATALOG / template.name.replace(".template.", ".values.")).read_text())
    given = {i.name: REQUIRED[i.name] for i in inputs if i.name in REQUIRED and not i.default}
    return render(template.read_text(), fill(inputs, given), CLOCK)


def expected_stages(document: dict) -> dict[str, set[tuple[str, str]]]:
    """Stage name -> dependency (name, STATUS) pairs, read straight from the rendered YAML."""
    found = {}
    for section in ("jobs", "services"):
        for name, step in (document.get(section) or {}).items():
            deps = {(d["name"], d.get("status", "FINISHED").upper()) for d in step.get("depends-on") or []}
            deps |= {(n, "FINISHED") for n in step.get("requires") or []}
            array = step.get("task-array")
            names = [f"{name}[{i}]" for i in range(array["start"], array["end"] + 1)] if array else [name]
            found.update({n: deps for n in names})
    return found


def test_the_catalog_holds_the_v4_templates():
    assert len(TEMPLATES) >= 40


@pytest.mark.parametrize("template", TEMPLATES, ids=lambda p: p.name.removesuffix(".template.yaml"))
def test_a_catalog_template_parses_and_its_stages_come_out_as_written(template):
    text = rendered(template)
    result = parse_fuzzfile(text)
    assert result.errors == []
    stages = list_stages(result.definition)
    transfers = {s.name for s in stages if s.kind in TRANSFER_KINDS}  # volumes' ingress and egress, checked below
    steps = {s.name: {(d.name, d.status) for d in s.dependencies if d.name not in transfers}
             for s in stages if s.name not in transfers}
    assert steps == expected_stages(yaml.safe_load(text))
    for stage in stages:
        for volume in set(stage.mounts.values()) & {t.removeprefix("ingress:") for t in transfers}:
            assert ("ingress:" + volume, "FINISHED") in {(d.name, d.status) for d in stage.dependencies}
    position = {s.name: i for i, s in enumerate(stages)}
    for stage in stages:
        for dep in stage.dependencies:
            first_of_dep = min(i for n, i in position.items() if n == dep.name or n.startswith(dep.name + "["))
            assert first_of_dep < position[stage.name]


def test_the_v1_catalog_template_is_upgraded_with_warnings():
    result = parse_fuzzfile(rendered(CATALOG / "rclone-server.template.yaml"))
    assert result.errors == [] and result.warnings[0].path == "version"
