"""Where the Fuzzball reference material is: `../shared` beside the checkout (as CI lays it), else /work/shared."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
ROOTS = (REPO.parent / "shared", Path("/work/shared"))


def fuzzball(*parts: str) -> Path:
    """The first root that has it; a path that does not exist when none has (tests then collect nothing)."""
    for root in ROOTS:
        candidate = root.joinpath("reference", "fuzzball", *parts)
        if candidate.exists():
            return candidate
    return ROOTS[0].joinpath("reference", "fuzzball", *parts)
