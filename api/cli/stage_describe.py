"""`roving workflow describe ID [STAGE]`'s stage rows: attempts counted as made (0 for a stage that never ran), and
one stage in full (its allocation's resources and its own events)."""

from __future__ import annotations

from typing import Any

from api.cli.client import ApiError, Client
from api.cli.output import fail, table
from domain.quantities import human_bytes

FIELDS = ["kind", "status", "attempts", "exit_code", "node", "reason", "allocation_id", "started_at", "ended_at"]
EVENT_COLUMNS = ["time", "type", "message"]


def attempts_made(stage: dict[str, Any]) -> int:
    """Attempts that started: the current one once it has, only the earlier ones before (the API's `attempts` is the
    current attempt's number, 1 before anything ran)."""
    return max(0, stage["attempts"] if stage.get("started_at") else stage["attempts"] - 1)


def stage_rows(stages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{**s, "attempts": attempts_made(s)} for s in stages]


def one_stage(detail: dict[str, Any], name: str, output: str, client: Client) -> Any:
    """The stage's fields, its resources (from its allocation, where the caller may read it) and its events."""
    found = next((s for s in detail["stages"] if s["name"] == name), None)
    if found is None:
        known = ", ".join(s["name"] for s in detail["stages"][:20])
        fail(f"workflow {detail['id']} has no stage {name!r}; its stages: {known}")
        return None
    events = [e for e in client.get(f"/v4/workflows/{detail['id']}/events")["events"] if e.get("stage") == name]
    resources = _resources(detail["id"], found.get("allocation_id"), client)
    if output != "table":
        return {**found, "attempts_made": attempts_made(found), "resources": resources, "events": events}
    lines = [f"workflow: {detail['id']} ({detail['name']})", f"stage: {name}"]
    lines += [f"{field}: {_text(attempts_made(found) if field == 'attempts' else found.get(field))}" for field in FIELDS]
    lines.append(f"resources: {_resources_text(resources)}")
    print("\n".join(lines) + "\n")
    return table(events, EVENT_COLUMNS) if events else "no events"


def _resources(workflow: str, allocation: str | None, client: Client) -> dict[str, Any] | None:
    if not allocation:
        return None
    try:
        explained = client.get(f"/v4/workflows/{workflow}/allocations/{allocation}/explain")
    except ApiError:  # not the caller's to explain: the rest of the stage still shows
        return None
    return (explained.get("allocation") or {}).get("resources")


def _resources_text(resources: dict[str, Any] | None) -> str:
    if resources is None:
        return "-"
    text = f"cpu {resources.get('cpu_cores', 1)}, memory {human_bytes(resources.get('memory_bytes', 0))}"
    text += "".join(f", {name} x{count}" for name, count in sorted((resources.get("devices") or {}).items()))
    return text + (f" on {resources['nodes']} nodes" if resources.get("nodes", 1) > 1 else "")


def _text(value: Any) -> str:
    return "-" if value is None or value == "" else str(value)
