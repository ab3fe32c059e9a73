"""A template's inputs (its `*.values.yaml`) and the values a person gives them, checked and typed for rendering.

A values file lists `{name, display_name, <kind>_value, display_category, options_input}`; the kind (string, uint,
bool, secret, volume) decides the Go type the template sees. A person's values come as the same list or as a plain
`NAME: value` mapping. Secret and volume inputs hold a `secret://` or `volume://` reference; left unset they are
the empty string, so a template's `{{ if .S3Secret }}` skips what needs them instead of failing.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec
import yaml

from domain.fuzzfile.schema import Problem
from domain.fuzzfile.volume_refs import Reference as VolumeReference
from domain.fuzzfile.volume_refs import parse_reference as parse_volume
from domain.secrets.references import parse_reference as parse_secret
from domain.secrets.rules import SecretError

KINDS = ("string", "uint", "bool", "secret", "volume")
REFERENCED = ("secret", "volume")
MAX_VALUES_BYTES = 256 * 1024


class CatalogError(ValueError):
    """Input that cannot be used, with every problem at its field."""

    def __init__(self, problems: list[Problem]) -> None:
        super().__init__("; ".join(f"{p.path}: {p.message}" for p in problems))
        self.problems = problems


class Input(msgspec.Struct, frozen=True, kw_only=True):
    """One value a template takes: its kind, its default and how a form shows it."""

    name: str
    kind: str
    display_name: str = ""
    display_category: str = ""
    default: str | int | bool = ""
    options: list[str] = []

    @property
    def optional_reference(self) -> bool:
        return self.kind in REFERENCED and not self.default


def parse_inputs(text: str, where: str = "values") -> list[Input]:
    """The inputs a values file declares; CatalogError naming each malformed entry."""
    entries = _entries(_load(text, where), where)
    found, problems = [], []
    for i, entry in enumerate(entries):
        path = f"{where}[{i}]"
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str) or not entry["name"]:
            problems.append(Problem(path, "each value needs a `name`"))
            continue
        kinds = [k.removesuffix("_value") for k in entry if k.endswith("_value")]
        if len(kinds) != 1 or kinds[0] not in KINDS:
            problems.append(Problem(f"{path}.{entry['name']}", f"give exactly one of {', '.join(k + '_value' for k in KINDS)}"))
            continue
        found.append(_input(entry, kinds[0]))
    if problems:
        raise CatalogError(problems)
    return found


def _input(entry: dict[str, Any], kind: str) -> Input:
    raw = entry.get(f"{kind}_value")
    default = _reference(raw) if kind in REFERENCED else raw
    offered = entry.get("options_input")
    options = (offered.get("options") or []) if isinstance(offered, dict) else []
    return Input(name=entry["name"], kind=kind, display_name=str(entry.get("display_name") or "").strip(),
                 display_category=str(entry.get("display_category") or "").strip(),
                 default=_typed_default(kind, default), options=[str(o) for o in options])


def _typed_default(kind: str, value: Any) -> str | int | bool:
    if kind == "uint":
        return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0
    if kind == "bool":
        return value if isinstance(value, bool) else False
    return "" if value is None else str(value)


def read_values(text: str, where: str = "values") -> dict[str, Any]:
    """A person's values: a values-file list (`values: [{name, <kind>_value}]`) or a `NAME: value` mapping."""
    if len(text.encode()) > MAX_VALUES_BYTES:
        raise CatalogError([Problem(where, f"a values file is at most {MAX_VALUES_BYTES} bytes")])
    document = _load(text, where)
    if document is None:
        return {}
    if isinstance(document, dict) and "values" not in document:
        return {str(k): v for k, v in document.items()}
    given = {}
    for entry in _entries(document, where):
        if isinstance(entry, dict) and isinstance(entry.get("name"), str):
            value = next((v for k, v in entry.items() if k.endswith("_value")), None)
            given[entry["name"]] = _reference(value) if isinstance(value, dict) else value
    return given


def fill(inputs: list[Input], given: Mapping[str, Any]) -> dict[str, Any]:
    """The values the template renders with: each input's default, overlaid by what was given, typed; every
    problem (an unknown name, a wrong type, a choice not offered, a malformed reference) named at `values.NAME`."""
    known = {i.name: i for i in inputs}
    problems = [Problem(f"values.{name}", f"this template takes no value {name!r}; it takes "
                                          f"{', '.join(sorted(known)) or 'none'}") for name in given if name not in known]
    values: dict[str, Any] = {}
    for spec in inputs:
        raw = given.get(spec.name, spec.default)
        value, problem = typed(spec, raw)
        if problem:
            problems.append(Problem(f"values.{spec.name}", problem))
        values[spec.name] = value
    if problems:
        raise CatalogError(problems)
    return values


def typed(spec: Input, raw: Any) -> tuple[Any, str]:
    """(the value as the template sees it, "" or why it cannot be used)."""
    if spec.kind == "uint":
        return _whole(raw)
    if spec.kind == "bool":
        return _boolean(raw)
    text = _reference(raw) if isinstance(raw, dict) else ("" if raw is None else str(raw))
    if isinstance(raw, bool) or (isinstance(raw, list | dict) and spec.kind not in REFERENCED):
        return text, f"expected a string, got {raw!r}"
    if spec.options and text not in spec.options:
        return text, f"expected one of {', '.join(spec.options)}, got {text!r}"
    if spec.kind == "secret" and text:
        return text, _secret_problem(text)
    if spec.kind == "volume" and text and not isinstance(parse_volume(text), VolumeReference):
        return text, str(parse_volume(text))
    return text, ""


def _whole(raw: Any) -> tuple[Any, str]:
    if isinstance(raw, str) and raw.strip().isdigit():
        raw = int(raw.strip())
    if isinstance(raw, int) and not isinstance(raw, bool) and 0 <= raw < 2**63:
        return raw, ""
    return raw, f"expected a whole number 0 or more, got {raw!r}"


def _boolean(raw: Any) -> tuple[Any, str]:
    if isinstance(raw, str) and raw.strip().lower() in ("true", "false"):
        return raw.strip().lower() == "true", ""
    if isinstance(raw, bool):
        return raw, ""
    return raw, f"expected true or false, got {raw!r}"


def _secret_problem(text: str) -> str:
    try:
        parse_secret(text)
    except SecretError as error:
        return error.reason
    return ""


def _reference(value: Any) -> str:
    """A `secret_value`/`volume_value`: `{reference: ...}` (or a bare string); unset is ""."""
    if isinstance(value, dict):
        value = value.get("reference")
    return "" if value is None else str(value)


def _load(text: str, where: str) -> Any:
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        line = f" (line {mark.line + 1})" if mark is not None else ""
        raise CatalogError([Problem(where, f"not valid YAML{line}: {getattr(error, 'problem', error)}")]) from None


def _entries(document: Any, where: str) -> list[Any]:
    entries = document.get("values") if isinstance(document, dict) else None
    if entries is None:
        return []
    if not isinstance(entries, list):
        raise CatalogError([Problem(f"{where}.values", "expected a list of {name, <kind>_value} entries")])
    return entries
