"""Go-style duration strings ("1h30m", "5m0s", "300s", "1.5h") parsed to seconds; pure helpers."""

from __future__ import annotations

import math
import re

UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
PART = re.compile(r"(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h|d)")


class DurationError(ValueError):
    """A duration string that cannot be read; the message says what a valid one looks like."""


def parse_duration(text: str | int | float) -> float:
    """Seconds in `text`; a bare number means seconds. Raises DurationError with a teaching message."""
    if isinstance(text, bool):
        raise DurationError("expected a duration such as 30m or 1h30m, got a boolean")
    if isinstance(text, (int, float)):
        return _non_negative(float(text))
    cleaned = text.strip()
    if re.fullmatch(r"\d+(?:\.\d+)?", cleaned):
        return _non_negative(float(cleaned))
    parts = PART.findall(cleaned)
    if not cleaned or "".join(n + u for n, u in parts) != cleaned:
        raise DurationError(f"{text!r} is not a duration; use a number with units ns, us, ms, s, m, h or d, e.g. 1h30m")
    return _finite(sum(float(number) * UNITS[unit] for number, unit in parts), text)


def format_duration(seconds: float) -> str:
    """The shortest Go-style rendering of whole seconds, e.g. 5400 -> 1h30m."""
    whole = int(seconds)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    text = (f"{hours}h" if hours else "") + (f"{minutes}m" if minutes else "") + (f"{secs}s" if secs else "")
    return text or "0s"


def _finite(value: float, text: str | int | float) -> float:
    """`.inf`, `.nan` and digits past a float's range mean no moment anyone can wait until."""
    if not math.isfinite(value):
        raise DurationError(f"{text!r} is not a finite duration; use a number with units, e.g. 1h30m")
    return value


def _non_negative(value: float) -> float:
    _finite(value, value)
    if value < 0:
        raise DurationError("a duration cannot be negative")
    return value
