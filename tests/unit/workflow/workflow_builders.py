"""Test helpers: build Fuzzfiles and submitted workflows in a line."""

from datetime import UTC, datetime, timedelta
from uuid import UUID

from domain.fuzzfile import parse_fuzzfile
from domain.workflow import Workflow

T0 = datetime(2025, 1, 1, tzinfo=UTC)
OWNER = {"organization": "org-1", "group": "group-1", "user": "alice"}


def at(minutes: int) -> datetime:
    return T0 + timedelta(minutes=minutes)


def step(name: str, deps: str = "", extra: str = "", kind: str = "job") -> str:
    """One job/service line: deps as 'a' or 'a:FAILED,b'."""
    needs = [d.split(":") for d in deps.split(",") if d]
    dep_text = ", ".join(f"{{name: {d[0]}, status: {d[1] if len(d) > 1 else 'FINISHED'}}}" for d in needs)
    body = "image: {uri: docker://alpine:3.20}, script: 'true'" + (f", depends-on: [{dep_text}]" if needs else "")
    return f"  {name}: {{{body}{', ' + extra if extra else ''}}}\n"


def fuzzfile(jobs: list[str], services: list[str] = ()) -> str:
    text = "version: v4\njobs:\n" + "".join(jobs)
    return text + ("services:\n" + "".join(services) if services else "")


def submit(text: str, workflow_id: int = 1, **kwargs) -> Workflow:
    result = parse_fuzzfile(text)
    assert result.errors == [], result.errors
    return Workflow.submit(UUID(int=workflow_id), "wf", result.definition, OWNER, by="alice", at=T0, **kwargs)


def run(workflow: Workflow, stage: str, exit_code: int = 0, node: str = "n1", minute: int = 1) -> None:
    attempt = workflow.stage(stage).attempt
    workflow.stage_started(stage, attempt, node, at(minute))
    workflow.stage_exited(stage, attempt, exit_code, at(minute + 1))


def statuses(workflow: Workflow) -> dict[str, str]:
    return {v.name: v.status.value for v in workflow.stage_views()}
