"""The functions a catalog template may call: Go text/template's builtins and the sprig subset the catalog uses.

Each behaves as its Go original does on the values a catalog holds (strings, whole numbers, booleans, lists and
maps); where Go would stop with a type error, these answer leniently rather than crash a render. Time and
randomness come from the `Clock` the renderer is given, so the domain stays deterministic and tests can fix both.
"""

from __future__ import annotations

import base64
import json
import posixpath
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

VERB = re.compile(r"%([-+# 0]*)(\d*)(?:\.(\d+))?([a-zA-Z%])")
MAX_TEXT = 2**20  # characters of any one string a function makes (domain/catalog/budget.py: the render's budget)
MAX_WIDTH = 1_000  # printf's width and precision: Go pads to any width, so a template could ask for gigabytes
MAX_ITEMS = 10_000  # items of a list a function makes, and turns of one `range`
MAX_INT_BITS = 256  # a whole number's size: `mul` cannot build numbers whose printing costs seconds


class RenderError(ValueError):
    """A template that cannot be rendered: a syntax error, an unknown function, a bad call (the message says)."""


class TemplateFailure(RenderError):
    """The template called `fail` (or `required`): its message is meant for the person who filled in the values."""


@dataclass(frozen=True)
class Clock:
    """What `now` and `randInt` answer: passed in, never read from the machine by the domain."""

    now: datetime
    rand_int: Callable[[int, int], int]  # (low, high) -> low <= n < high, as sprig's randInt


def show(value: Any) -> str:
    """A value as `{{ value }}` prints it (Go's %v), `<no value>` for a missing one."""
    if value is None:
        return "<no value>"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return go_float(value)
    if isinstance(value, list | tuple | dict):
        too_long(text_size(value), "a list or map's text")
    if isinstance(value, list | tuple):
        return "[" + " ".join(show(v) for v in value) + "]"
    if isinstance(value, dict):
        return "map[" + " ".join(f"{show(k)}:{show(value[k])}" for k in sorted(value, key=str)) + "]"
    return str(value)


def text_size(value: Any, limit: int = MAX_TEXT) -> int:
    """About how many characters `value` prints as, counted only until past `limit` (so counting is cheap too)."""
    if isinstance(value, str):
        return len(value)
    if not isinstance(value, list | tuple | dict):
        return 24
    total = 2
    for item in value.items() if isinstance(value, dict) else value:
        total += 1 + text_size(item, limit - total)
        if total > limit:
            break
    return total


def texts_size(values: Any) -> int:
    """About how many characters `values` print as together, counted only until past MAX_TEXT."""
    total = 0
    for value in values:
        total += text_size(value, MAX_TEXT - total)
        if total > MAX_TEXT:
            break
    return total


def too_long(size: int, what: str) -> None:
    if size > MAX_TEXT:
        raise RenderError(f"{what} would be over {MAX_TEXT:,} characters (the limit)")


def go_float(value: float) -> str:
    """Go's %v of a float64: the shortest digits, in exponent form below 1e-4 or from 1e21."""
    if value == int(value) and abs(value) < 1e21:
        return str(int(value))
    text = repr(value)
    return text.replace("e+0", "e+").replace("e-0", "e-") if "e" in text else text


def truthy(value: Any) -> bool:
    """Go's truth: false, 0, nil and empty strings, lists and maps are false."""
    return bool(value)


def printf(fmt: str, *args: Any) -> str:
    """Go's Sprintf for the verbs templates use (%s %v %q %d %f %x %%), with flags and widths."""
    queue, made = list(args), [len(fmt)]

    def one(match: re.Match[str]) -> str:
        flags, width, precision, verb = match.groups()
        if verb == "%":
            return "%"
        if not queue:
            return f"%!{verb}(MISSING)"
        text = _verb(queue.pop(0), flags, width, precision, verb)
        made[0] += len(text)  # many padded verbs in one format: stop at the limit, not after building them all
        too_long(made[0], "printf's result")
        return text

    out = VERB.sub(one, fmt)
    return out + "".join(f"%!(EXTRA {show(a)})" for a in queue)


def _verb(value: Any, flags: str, width: str, precision: str | None, verb: str) -> str:
    for what, digits in (("width", width), ("precision", precision)):
        if digits and (len(digits) > 6 or int(digits) > MAX_WIDTH):
            raise RenderError(f"printf {what} {digits} is over the limit of {MAX_WIDTH:,}")
    number = isinstance(value, int | float) and not isinstance(value, bool)
    if verb in "dxXob" and isinstance(value, int) and not isinstance(value, bool):
        return format(value, _spec(flags, width, None) + verb)
    if verb in "feEgG" and number:
        return format(float(value), _spec(flags, width, precision or "6") + verb)
    if verb not in "sqv":
        return f"%!{verb}({show(value)})"
    text = show(value)
    text = text[: int(precision)] if precision is not None else text
    text = json.dumps(text, ensure_ascii=False) if verb == "q" else text
    size = int(width or 0)
    return text.ljust(size) if "-" in flags else text.rjust(size, "0" if "0" in flags and number else " ")


def _spec(flags: str, width: str, precision: str | None) -> str:
    """A Go verb's flags as Python's format spec: - left-aligns, + and space sign, 0 pads, # alternates."""
    align = "<" if "-" in flags else ""
    sign = "+" if "+" in flags else (" " if " " in flags else "")
    zero = "0" if "0" in flags and not align else ""
    return align + sign + ("#" if "#" in flags else "") + zero + width + (f".{precision}" if precision else "")


def fail(message: Any) -> None:
    raise TemplateFailure(show(message))


def required(message: str, value: Any = None) -> Any:
    if value is None or value == "":
        raise TemplateFailure(message)
    return value


def substr(start: int, end: int, text: Any) -> str:
    """sprig's substr: a negative start means from 0, an end past the string (or negative) means to its end."""
    whole = to_string(text)
    if start < 0:
        return whole[:end]
    if end < 0 or end > len(whole):
        return whole[start:]
    return whole[start:end]


def join(sep: Any, items: Any) -> str:
    parts = [to_string(i) for i in items or []]
    too_long(sum(len(part) for part in parts) + len(to_string(sep)) * len(parts), "join's result")
    return to_string(sep).join(parts)


def replace(old: Any, new: Any, text: Any) -> str:
    was, now, whole = to_string(old), to_string(new), to_string(text)
    count = whole.count(was) if was else len(whole) + 1
    too_long(len(whole) + count * max(0, len(now) - len(was)), "replace's result")
    return whole.replace(was, now)


def to_string(value: Any) -> str:
    return "" if value is None else show(value)


def to_int(value: Any) -> int:
    """sprig's int: a number's whole part, a numeric string's value, anything else 0."""
    if isinstance(value, bool):
        return int(value)
    try:
        return int(float(value))
    except (TypeError, ValueError):
        return 0


def index(value: Any, *keys: Any) -> Any:
    for key in keys:
        if isinstance(value, dict):
            value = value.get(key)
        elif isinstance(value, list | tuple | str):
            if not isinstance(key, int) or not 0 <= key < len(value):
                raise RenderError(f"index out of range: {show(key)} (length {len(value)})")
            value = value[key]
        else:
            raise RenderError(f"cannot index {show(value)} with {show(key)}")
    return value


def length(value: Any) -> int:
    if value is None:
        return 0
    if isinstance(value, str | list | tuple | dict):
        return len(value)
    raise RenderError(f"len of {show(value)}: not a string, list or map")


def to_json(value: Any) -> str:
    """Go's json.Marshal: compact, with <, > and & escaped."""
    too_long(text_size(value), "toJson's result")
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def base(path: Any) -> str:
    """Go's path.Base: the last element, "." for an empty path, "/" for the root."""
    text = to_string(path).rstrip("/")
    if not text:
        return "/" if to_string(path) else "."
    return posixpath.basename(text)


def product(*values: Any) -> int:
    result = 1
    for value in values:
        result *= to_int(value)
        if result.bit_length() > MAX_INT_BITS:  # each further product would cost more than the last
            raise RenderError(f"mul made a number of over {MAX_INT_BITS} bits (the limit)")
    return result


def split_list(sep: Any, text: Any) -> list[str]:
    whole, between = to_string(text), to_string(sep)
    if between and whole.count(between) >= MAX_ITEMS:
        raise RenderError(f"splitList made {whole.count(between) + 1:,} items, over the limit of {MAX_ITEMS:,}")
    return whole.split(between)


def comparable(a: Any, b: Any) -> tuple[Any, Any]:
    """Go compares numbers across int and float; other kinds only with their own kind."""
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a, b
    if type(a) is not type(b) and None not in (a, b):
        raise RenderError(f"incompatible types for comparison: {show(a)} and {show(b)}")
    return a, b


def less(a: Any, b: Any) -> bool:
    x, y = comparable(a, b)
    return bool(x < y)


def clock_funcs(clock: Clock) -> dict[str, Callable[..., Any]]:
    return {"now": lambda: clock.now, "randInt": lambda low, high: clock.rand_int(to_int(low), to_int(high))}


FUNCS: dict[str, Callable[..., Any]] = {
    "printf": printf,
    "print": lambda *a: "".join(show(v) for v in a),
    "println": lambda *a: " ".join(show(v) for v in a) + "\n",
    "fail": fail,
    "required": required,
    "not": lambda v: not truthy(v),
    "empty": lambda v=None: not truthy(v),
    "eq": lambda a, *bs: any(x == y for x, y in (comparable(a, b) for b in bs)),
    "ne": lambda a, b: (lambda x, y: x != y)(*comparable(a, b)),
    "lt": less,
    "le": lambda a, b: less(a, b) or a == b,
    "gt": lambda a, b: less(b, a),
    "ge": lambda a, b: less(b, a) or a == b,
    "len": length,
    "index": index,
    "trim": lambda s: to_string(s).strip(),
    "trimAll": lambda cut, s: to_string(s).strip(cut),
    "trimPrefix": lambda p, s: to_string(s).removeprefix(p),
    "trimSuffix": lambda p, s: to_string(s).removesuffix(p),
    "hasPrefix": lambda p, s: to_string(s).startswith(p),
    "hasSuffix": lambda p, s: to_string(s).endswith(p),
    "contains": lambda part, s: part in to_string(s),
    "lower": lambda s: to_string(s).lower(),
    "upper": lambda s: to_string(s).upper(),
    "replace": replace,
    "substr": substr,
    "splitList": split_list,
    "join": join,
    "base": base,
    "quote": lambda *a: " ".join(json.dumps(to_string(v), ensure_ascii=False) for v in a),
    "squote": lambda *a: " ".join(f"'{to_string(v)}'" for v in a),
    "toString": to_string,
    "toJson": to_json,
    "b64enc": lambda s: base64.b64encode(to_string(s).encode()).decode(),
    "int": to_int,
    "add": lambda *a: sum(to_int(x) for x in a),
    "sub": lambda a, b: to_int(a) - to_int(b),
    "mul": product,
    "max": lambda *a: max(to_int(x) for x in a),
    "min": lambda *a: min(to_int(x) for x in a),
    "default": lambda d, v=None: v if truthy(v) else d,
    "list": lambda *a: list(a),
    "append": lambda items, v: [*(items or []), v],
    "dict": lambda *a: {to_string(k): v for k, v in zip(a[::2], a[1::2], strict=False)},  # an odd last key is dropped
    "unixEpoch": lambda t: str(int(t.timestamp())),
}
JOINING = frozenset({"print", "println", "printf", "quote", "squote"})  # their result holds every argument's text
