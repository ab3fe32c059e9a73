"""A catalog template: its files read from a source (`NAME.template.yaml`, `NAME.values.yaml`, an optional
`NAME.metadata.yaml`), what search looks at, the run form's groups, and rendering it into a Fuzzfile.

The description is Markdown: from the metadata file's `description`, else the template's leading `#` comment
(without its copyright line). A rendered `version: v1` Fuzzfile comes back upgraded to v4, with the upgrade's
warnings, so everyone who renders a template gets the same v4 text the server would run.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec
import yaml

from domain.catalog.gofuncs import RenderError, TemplateFailure
from domain.catalog.gotemplate import Budget, Clock, render
from domain.catalog.inputs import CatalogError, Input, fill, parse_inputs
from domain.fuzzfile.decode import load_yaml
from domain.fuzzfile.parse import parse_fuzzfile
from domain.fuzzfile.schema import Problem
from domain.fuzzfile.upgrade import upgrade_v1

UNCATEGORISED = "General"


class TemplateFiles(msgspec.Struct, frozen=True):
    """What a source holds for one template name (metadata may be empty)."""

    name: str
    template: str
    values: str
    metadata: str = ""


class Template(msgspec.Struct, frozen=True, kw_only=True):
    name: str
    source: str
    source_id: str
    scope: str
    text: str
    inputs: list[Input]
    display_name: str = ""
    description: str = ""
    category: str = ""
    tags: list[str] = []

    @property
    def key(self) -> str:
        return f"{self.source}/{self.name}"


class Rendered(msgspec.Struct, frozen=True):
    fuzzfile: str
    warnings: list[Problem]


def build(files: TemplateFiles, source: str, source_id: str, scope: str) -> Template:
    """The template from its files; CatalogError naming the file and field that cannot be read."""
    inputs = parse_inputs(files.values, f"{files.name}.values.yaml")
    meta = _metadata(files)
    tags = meta["tags"] if isinstance(meta.get("tags"), list) else []
    return Template(name=files.name, source=source, source_id=source_id, scope=scope, text=files.template,
                    inputs=inputs, display_name=str(meta.get("name") or meta.get("display_name") or files.name),
                    description=str(meta.get("description") or leading_comment(files.template)).strip(),
                    category=str(meta.get("category") or ""), tags=[str(t) for t in tags])


def _metadata(files: TemplateFiles) -> dict[str, Any]:
    if not files.metadata.strip():
        return {}
    try:
        loaded = yaml.safe_load(files.metadata)
    except yaml.YAMLError as error:
        raise CatalogError([Problem(f"{files.name}.metadata.yaml", f"not valid YAML: {error}")]) from None
    if not isinstance(loaded, dict):
        raise CatalogError([Problem(f"{files.name}.metadata.yaml", "expected a mapping (name, description, ...)")])
    return loaded


def leading_comment(text: str) -> str:
    """The `#` lines a template starts with, as text, leaving out copyright notices."""
    lines = []
    for line in text.splitlines():
        if not line.startswith("#"):
            break
        body = line[1:].removeprefix(" ")
        if "copyright" not in body.lower():
            lines.append(body)
    return "\n".join(lines)


def matches(template: Template, query: str) -> bool:
    """Every word of the query appears (case-blind) in its name, title, description, category, tags or the
    inputs' names and descriptions."""
    words = query.lower().split()
    if not words:
        return True
    haystack = " ".join([template.name, template.display_name, template.description, template.category,
                         *template.tags, *(f"{i.name} {i.display_name} {i.display_category}" for i in template.inputs)])
    text = haystack.lower()
    return all(word in text for word in words)


def form_groups(template: Template) -> dict[str, list[Input]]:
    """The inputs grouped by `display_category`, in the order each category first appears."""
    groups: dict[str, list[Input]] = {}
    for spec in template.inputs:
        groups.setdefault(spec.display_category or UNCATEGORISED, []).append(spec)
    return groups


def render_fuzzfile(template: Template, given: Mapping[str, Any], clock: Clock,
                    budget: Budget | None = None) -> Rendered:
    """The Fuzzfile the values make (v1 upgraded to v4); CatalogError with every problem: a value the template
    does not take or cannot use, the template's own `fail` message, a render past its budget (naming the limit), or
    what the rendered Fuzzfile gets wrong."""
    values = fill(template.inputs, given)
    try:
        text = render(template.text, values, clock, budget)
    except TemplateFailure as failure:
        raise CatalogError([Problem("values", str(failure))]) from None
    except RenderError as error:
        raise CatalogError([Problem(f"template {template.key}", str(error))]) from None
    text, upgraded = upgraded_text(text)
    parsed = parse_fuzzfile(text)
    if parsed.errors:
        raise CatalogError([Problem(f"fuzzfile.{p.path}" if p.path else "fuzzfile", p.message) for p in parsed.errors])
    return Rendered(text, upgraded + [w for w in parsed.warnings if w not in upgraded])


def upgraded_text(text: str) -> tuple[str, list[Problem]]:
    """A v1 Fuzzfile as v4 YAML and the upgrade's warnings; anything else as it is."""
    document, problems = load_yaml(text)
    if problems or not isinstance(document, dict) or document.get("version") != "v1":
        return text, []
    upgraded, warnings = upgrade_v1(document)
    return yaml.dump(upgraded, Dumper=_BlockDumper, sort_keys=False, width=1000, allow_unicode=True), warnings


class _BlockDumper(yaml.SafeDumper):  # type: ignore[misc]  # yaml ships no stubs: its classes are Any
    """Scripts stay readable: a string with newlines is written as a `|` block, as template authors write them."""


def _string(dumper: yaml.SafeDumper, text: str) -> yaml.ScalarNode:
    return dumper.represent_scalar("tag:yaml.org,2002:str", text, style="|" if "\n" in text else None)


_BlockDumper.add_representer(str, _string)


def summary(template: Template) -> dict[str, Any]:
    """A listing's row."""
    return {"name": template.name, "key": template.key, "source": template.source, "scope": template.scope,
            "display_name": template.display_name, "description": template.description,
            "category": template.category, "tags": template.tags}


def detail(template: Template) -> dict[str, Any]:
    """`show`: the row, its inputs grouped for a form, and the template text."""
    groups = [{"display_category": name, "inputs": [msgspec.to_builtins(i) | {"optional": i.optional_reference}
                                                     for i in inputs]}
              for name, inputs in form_groups(template).items()]
    return {**summary(template), "groups": groups, "template": template.text}
