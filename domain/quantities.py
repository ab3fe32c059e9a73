"""Memory sizes with units ("1GiB", "0.5GiB", "32KB", "1024") parsed to bytes; pure helpers."""

from __future__ import annotations

import math
import re

BINARY = {"KI": 2**10, "MI": 2**20, "GI": 2**30, "TI": 2**40, "PI": 2**50}
DECIMAL = {"K": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15}
MAX_SHARED = 2**31 - 1  # a shared resource's (a license's) largest count, in a Fuzzfile and the scheduler's config
SIZE = re.compile(r"(\d+(?:\.\d+)?)\s*([KMGTP]i?)?B?", re.IGNORECASE)


class QuantityError(ValueError):
    """A size that cannot be read; the message says what a valid one looks like."""


def parse_memory(text: str | int | float) -> int:
    """Bytes in `text`; no unit means bytes. KiB/MiB/GiB are powers of two, KB/MB/GB powers of ten."""
    if isinstance(text, bool):
        raise QuantityError("expected a memory size such as 4GiB, got a boolean")
    if isinstance(text, (int, float)):
        return _whole(float(text))
    match = SIZE.fullmatch(text.strip())
    if not match:
        raise QuantityError(f"{text!r} is not a memory size; use a number with an optional unit, e.g. 512MiB, 4GiB or 1GB")
    number, unit = float(match.group(1)), (match.group(2) or "").upper()
    factor = BINARY.get(unit) or DECIMAL.get(unit) or 1
    return _whole(number * factor)


def _whole(value: float) -> int:
    if not math.isfinite(value):  # YAML's .inf and .nan, or digits past a float's range: no byte count
        raise QuantityError(f"a memory size must be a finite number such as 4GiB, got {value}")
    if value < 0:
        raise QuantityError("a memory size cannot be negative")
    return int(value)


def human_bytes(size: int) -> str:
    """A byte count as people write it in messages: `2 GiB`, `1.5 GiB`, `512 MiB`, `100 B` (at most two decimals,
    trailing zeros dropped), so a refusal never reads `memory 2147483648`."""
    for unit, factor in (("PiB", 2**50), ("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if abs(size) >= factor:
            return f"{size / factor:.2f}".rstrip("0").rstrip(".") + f" {unit}"
    return f"{size} B"
