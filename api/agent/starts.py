"""What an agent makes of the run specs it is assigned: the answer decoded, with a run spec that does not decode
failing alone (its allocation is reported as one that cannot start, the rest of the answer is applied), and each
`Start` made into the RunSpec its executor runs."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec

from adapters.runspec import RunSpec, run_spec_of
from domain.agent_protocol import Assignments, Start

Refused = tuple[str, int, str]  # (allocation, epoch, why): reported as an exit 126 ("cannot start")


class Key(msgspec.Struct):
    """What a report needs of a run spec that is otherwise unreadable."""

    allocation_id: str = ""
    epoch: int = 0


def decode_assignments(body: bytes) -> tuple[Assignments[Start], list[Refused]]:
    """The answer, and the run specs of it that do not decode as a `Start` (a msgspec.DecodeError when the answer
    itself is unreadable: then nothing of it is applied)."""
    try:
        return msgspec.json.decode(body, type=Assignments[Start]), []
    except msgspec.ValidationError:
        loose = msgspec.json.decode(body, type=Assignments[msgspec.Raw])
    starts: list[Start] = []
    refused: list[Refused] = []
    for item in loose.start:
        try:
            starts.append(msgspec.json.decode(item, type=Start))
        except msgspec.ValidationError as error:
            key = _key(item)
            refused.append((key.allocation_id, key.epoch, f"its run spec is unreadable: {error}"))
    return Assignments(starts, loose.stop, loose.volumes, loose.position), refused


def _key(item: msgspec.Raw) -> Key:
    try:
        return msgspec.json.decode(item, type=Key)
    except msgspec.DecodeError:
        return Key()


def build_spec(item: Start | Mapping[str, Any], env: dict[str, str] | None = None) -> RunSpec:
    """The RunSpec of a run spec, typed or as decoded JSON (a secret resolution's mapping); `env` in place of its
    own (the agent takes the registry's credential out of it first)."""
    start = item if isinstance(item, Start) else msgspec.convert(item, Start)
    return run_spec_of(start, env)
