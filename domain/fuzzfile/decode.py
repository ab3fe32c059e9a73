"""YAML text to plain data, and a shape check of that data against the schema that reports every problem."""

from __future__ import annotations

import difflib
import functools
import re
from typing import Any

import msgspec
import msgspec.inspect as mi
import yaml

from domain.fuzzfile.schema import Problem

_BASE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml when present: several times faster


LEADING_ZERO_TAG = "tag:roving,2026:leading-zero"
YAML_1_1_ONLY = {"tag:yaml.org,2002:bool", "tag:yaml.org,2002:timestamp", "tag:yaml.org,2002:int",
                 "tag:yaml.org,2002:float"}


class LeadingZero(str):
    """A plain scalar such as `017`: YAML 1.1 reads it as octal (15), YAML 1.2 as 17. It stays the text it was (an
    env value `01234` keeps its zero); where a number is expected the shape check says how to write one."""


class DuplicateKey(yaml.MarkedYAMLError):  # type: ignore[misc]  # yaml ships no stubs: its classes are Any
    """A mapping that names a key twice; YAML libraries silently keep the last one."""


class _Loader(_BASE_LOADER):  # type: ignore[misc, valid-type]  # a base chosen at run time (libyaml or not)
    """YAML 1.1 with its surprises taken out: booleans are only true/false (1.1 turns the key `on` of retry.on into
    True), no timestamps, no sexagesimal numbers (`1:30` is text, not 90), no octal without `0o` (`017` is not 15),
    and a key given twice in one mapping is an error naming both lines."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[Any, yaml.Node] = {}
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue  # `<<:` merges are meant to be overridden by the mapping's own keys
            key = self.construct_object(key_node, deep=True)
            first = seen.setdefault(key, key_node) if isinstance(key, (str, int, float, bool)) else key_node
            if first is not key_node:
                raise DuplicateKey(None, None, f"duplicate key `{key}` (first at line {first.start_mark.line + 1},"
                                   f" again at line {key_node.start_mark.line + 1}; only one may stay)",
                                   key_node.start_mark)
        mapping: dict[Any, Any] = super().construct_mapping(node, deep=deep)
        return mapping


_Loader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag not in YAML_1_1_ONLY]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
_Loader.add_implicit_resolver(
    "tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF")
)
_Loader.add_implicit_resolver(  # YAML 1.1's ints less base 60 and bare-zero octal; 0o17, 0x1f and 0b101 stay
    "tag:yaml.org,2002:int",
    re.compile(r"^[-+]?(?:0|[1-9][0-9_]*|0o[0-7_]+|0x[0-9a-fA-F_]+|0b[01_]+)$"), list("-+0123456789"),
)
_Loader.add_implicit_resolver(LEADING_ZERO_TAG, re.compile(r"^[-+]?0[0-9_]+$"), list("-+0"))
_Loader.add_implicit_resolver(  # YAML 1.1's floats less base 60 (`1:30.5`)
    "tag:yaml.org,2002:float",
    re.compile(r"""^(?:[-+]?[0-9][0-9_]*\.[0-9_]*(?:[eE][-+]?[0-9]+)?|[-+]?\.[0-9_]+(?:[eE][-+]?[0-9]+)?
                |[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$""", re.X), list("-+0123456789."),
)
_Loader.add_constructor(LEADING_ZERO_TAG, lambda loader, node: LeadingZero(node.value))

KIND_NAMES = {dict: "a mapping", list: "a list", str: "a string", bool: "a boolean", int: "a number", float: "a number"}
PLAIN_KEY = re.compile(r"^[A-Za-z0-9_-]+$")
INT64 = (-(2**63), 2**63 - 1)  # the widest whole number the event store's encoding keeps


def load_yaml(text: str) -> tuple[Any, list[Problem]]:
    """The YAML document as plain data, or a problem naming the line and column that broke parsing."""
    try:
        return yaml.load(text, Loader=_Loader), []
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        return None, [Problem("", f"not valid YAML: {where}{error.problem}")]
    except yaml.YAMLError as error:
        return None, [Problem("", f"not valid YAML: {type(error).__name__}")]
    except RecursionError:  # the pure-Python loader (no libyaml) recurses once per nesting level
        return None, [Problem("", "not valid YAML: nested too deeply")]


def wide_numbers(value: Any, path: str = "") -> list[Problem]:
    """Whole numbers an event (64-bit MessagePack) cannot keep, each named by its path."""
    if isinstance(value, int) and not isinstance(value, bool):
        return [] if INT64[0] <= value <= INT64[1] else [
            Problem(path, f"expected a whole number from {INT64[0]} to {INT64[1]}, got {value}")]
    if isinstance(value, dict):
        return [p for key, item in value.items() for p in wide_numbers(item, join(path, key))]
    if isinstance(value, list):
        return [p for index, item in enumerate(value) for p in wide_numbers(item, f"{path}[{index}]")]
    return []


def join(path: str, key: Any) -> str:
    """`jobs.train` + `policy` -> `jobs.train.policy`; keys with dots or slashes are quoted."""
    key = str(key)
    part = key if PLAIN_KEY.match(key) else f'"{key}"'
    if not path:
        return part
    return f"{path}.{part}" if PLAIN_KEY.match(key) else f"{path}[{part}]"


def check_shape(value: Any, struct_type: type, path: str = "") -> list[Problem]:
    """Every shape problem in `value` against `struct_type`: unknown keys, missing keys and wrong types."""
    problems: list[Problem] = []
    _check(value, _type_info(struct_type), path, problems)
    return problems


@functools.lru_cache(maxsize=64)
def _type_info(struct_type: type) -> mi.Type:
    """The schema's shape is fixed: inspect it once, not on every submission."""
    return mi.type_info(struct_type)


def _check(value: Any, info: mi.Type, path: str, problems: list[Problem]) -> None:
    if isinstance(info, mi.UnionType):
        _check_union(value, info, path, problems)
    elif isinstance(info, mi.StructType):
        _check_struct(value, info, path, problems)
    elif isinstance(info, mi.DictType):
        if _expect(value, dict, "a mapping", path, problems):
            for key, item in value.items():
                _check(item, info.value_type, join(path, key), problems)
    elif isinstance(info, mi.ListType):
        if _expect(value, list, "a list", path, problems):
            for index, item in enumerate(value):
                _check(item, info.item_type, f"{path}[{index}]", problems)
    else:
        _check_scalar(value, info, path, problems)


def _check_union(value: Any, info: mi.UnionType, path: str, problems: list[Problem]) -> None:
    options = [t for t in info.types if not isinstance(t, mi.NoneType)]
    if value is None and len(options) < len(info.types):
        return
    for option in options:
        if _fits(value, option):
            _check(value, option, path, problems)
            return
    if _leading_zero(value, options, path, problems):
        return
    wanted = " or ".join(dict.fromkeys(_describe(t) for t in options))
    problems.append(Problem(path, f"expected {wanted}, got {_kind(value)}"))


def _check_struct(value: Any, info: mi.StructType, path: str, problems: list[Problem]) -> None:
    if not _expect(value, dict, "a mapping", path, problems):
        return
    fields = {f.encode_name: f for f in info.fields}
    for key, item in value.items():
        field = fields.get(str(key))
        if field is None:
            problems.append(Problem(join(path, key), _unknown_key(str(key), list(fields))))
        else:
            _check(item, field.type, join(path, key), problems)
    for name, field in fields.items():
        if field.required and name not in value:
            problems.append(Problem(join(path, name), f"`{name}` is required here"))


def _unknown_key(key: str, valid: list[str]) -> str:
    close = difflib.get_close_matches(key, valid, n=1, cutoff=0.6)
    hint = f"did you mean `{close[0]}`?" if close else f"valid keys are: {', '.join(valid)}"
    return f"unknown key `{key}`; {hint}"


def _check_scalar(value: Any, info: mi.Type, path: str, problems: list[Problem]) -> None:
    if isinstance(info, mi.AnyType) or _fits(value, info):
        return
    if _leading_zero(value, [info], path, problems):
        return
    problems.append(Problem(path, f"expected {_describe(info)}, got {_kind(value)}"))


def _leading_zero(value: Any, options: list[mi.Type], path: str, problems: list[Problem]) -> bool:
    """`017` where a number is expected: say how to write the number meant, whichever base that was."""
    if not isinstance(value, LeadingZero) or not any(isinstance(t, (mi.IntType, mi.FloatType)) for t in options):
        return False
    digits = value.lstrip("+-").lstrip("0").replace("_", "") or "0"
    problems.append(Problem(path, f"`{value}` has a leading zero, which YAML 1.1 reads as octal: write {digits}, "
                                  f"or 0o{digits} if you mean octal"))
    return True


def _fits(value: Any, info: mi.Type) -> bool:
    if isinstance(info, (mi.StructType, mi.DictType)):
        return isinstance(value, dict)
    if isinstance(info, mi.ListType):
        return isinstance(value, list)
    if isinstance(info, mi.StrType):
        return isinstance(value, str)
    if isinstance(info, mi.BoolType):
        return isinstance(value, bool)
    if isinstance(info, mi.IntType):
        return isinstance(value, int) and not isinstance(value, bool)
    if isinstance(info, mi.FloatType):
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    return isinstance(info, mi.AnyType)


def _describe(info: mi.Type) -> str:
    if isinstance(info, (mi.StructType, mi.DictType)):
        return "a mapping"
    if isinstance(info, mi.ListType):
        return "a list"
    names = {mi.StrType: "a string", mi.BoolType: "true or false", mi.IntType: "a whole number", mi.FloatType: "a number"}
    return names.get(type(info), "a value")


def _expect(value: Any, kind: type, name: str, path: str, problems: list[Problem]) -> bool:
    if isinstance(value, kind):
        return True
    problems.append(Problem(path, f"expected {name}, got {_kind(value)}"))
    return False


def _kind(value: Any) -> str:
    """The kind of a value, never the value itself (it may be a secret or an env value)."""
    if value is None:
        return "nothing (null)"
    return "a string" if isinstance(value, str) else KIND_NAMES.get(type(value), type(value).__name__)


def convert(value: Any, struct_type: type) -> Any:
    """The checked data as structs (called only once check_shape found nothing)."""
    return msgspec.convert(_plain(value), struct_type, str_keys=True)


def _plain(value: Any) -> Any:
    """LeadingZero back to str: it marks text for the shape check only (msgspec would keep, and not encode, it)."""
    if isinstance(value, LeadingZero):
        return str(value)
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_plain(item) for item in value]
    return value
