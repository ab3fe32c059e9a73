"""Submitting a workflow again: its definition as a Fuzzfile, resubmit (the same, or an edited definition) and
retry (only the jobs that did not finish), each a new workflow of the caller.

A caller must be able to see the workflow (else 404, as describe); the new one is theirs, submitted through the
same application call as `POST /v4/workflows`, so their organization's rules, quotas and priority limits apply
and nothing of the first owner's carries over but the definition. Only this cluster's workflows: another
cluster's is resubmitted on its own control plane.
"""

from __future__ import annotations

from typing import Annotated, Any
from uuid import UUID

import msgspec
import yaml
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from api.http.answers import Problem, WorkflowCreated, WorkflowDefinition, WorkflowRetried, answers
from api.http.routes import common as c
from api.http.routes.workflows import ENDED, MAX_NAME, located, submission_id
from domain.app.errors import Conflict, NotFound
from domain.fuzzfile.retry import NothingToRetry, as_written, retry_definition

FROM = "roving.io/resubmitted-from"  # an annotation on the new workflow: the one it was submitted again from
RETRY_OF = "roving.io/retry-of"


class Resubmit(msgspec.Struct, forbid_unknown_fields=True):
    definition: str | dict[str, Any] | None = None  # an edited Fuzzfile; the workflow's own when absent
    name: Annotated[str, msgspec.Meta(max_length=MAX_NAME)] | None = None  # the workflow's own when absent
    priority: int | None = None  # the workflow's own when absent


class Retry(msgspec.Struct, forbid_unknown_fields=True):
    name: Annotated[str, msgspec.Meta(max_length=MAX_NAME)] | None = None
    priority: int | None = None


async def submitted(request: Request) -> tuple[Any, dict[str, Any]]:
    """(the describe view's detail, the definition as submitted) of a workflow of this cluster the caller may see."""
    found = await located(request)
    if found.remote:
        raise Conflict(f"workflow {found.detail.id} belongs to cluster {found.cluster}: submit it again on that "
                       "cluster's control plane")
    aggregate = await c.call(c.services(request).views.workflows.aggregate, UUID(str(found.detail.id)))
    if aggregate is None:
        raise NotFound(f"workflow {found.detail.id}'s definition")
    return found.detail, as_written(msgspec.to_builtins(aggregate.definition))


class Fuzzfile(yaml.SafeDumper):
    """YAML as a person writes a Fuzzfile: a script of several lines as a `|` block, not a quoted string."""


def text(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    block = "\n" in value and not any(line != line.rstrip() for line in value.splitlines())
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|" if block else None)


Fuzzfile.add_representer(str, text)


def as_yaml(definition: dict[str, Any]) -> str:
    return yaml.dump(definition, Dumper=Fuzzfile, sort_keys=False, allow_unicode=True, width=120)


@answers(WorkflowDefinition)
async def definition(request: Request) -> Response:
    detail, found = await submitted(request)
    return c.json(WorkflowDefinition(id=str(detail.id), name=detail.name, definition=as_yaml(found)))


async def submit_again(request: Request, detail: Any, definition: str | dict[str, Any], name: str, priority: int,
                       annotations: dict[str, str]) -> tuple[UUID, list[Problem]]:
    """The definition as a new workflow of the caller, as `POST /v4/workflows` submits one."""
    svc, workflow_id = c.services(request), submission_id(request)
    warnings = await c.call(svc.roving.submit_workflow, workflow_id, name, definition, priority, detail.preemptible,
                            c.principal(request), c.now(), annotations=annotations)
    await c.settle(request)
    return workflow_id, [Problem(path=w.path, message=w.message) for w in warnings or []]


@answers(WorkflowCreated)
async def resubmit(request: Request) -> Response:
    """Argo's `resubmit`: the workflow again as a new one (whatever its state), with an edited definition, name or
    priority when given."""
    wanted = await c.body(request, Resubmit)
    detail, found = await submitted(request)
    workflow_id, notes = await submit_again(
        request, detail, wanted.definition if wanted.definition is not None else found,
        detail.name if wanted.name is None else wanted.name,
        detail.priority if wanted.priority is None else wanted.priority, {FROM: str(detail.id)})
    return c.json(WorkflowCreated(id=str(workflow_id), warnings=notes), status=201)


@answers(WorkflowRetried)
async def retry(request: Request) -> Response:
    """Argo's `retry` as a new workflow: an ended workflow's jobs that did not all finish (what depended only on
    finished jobs no longer waits for them). 409 while it runs, or when every job finished."""
    wanted = await c.body(request, Retry)
    detail, found = await submitted(request)
    if detail.status not in ENDED:
        raise Conflict(f"workflow {detail.id} is {detail.status}: retry it once it has ended (or stop it first)")
    try:
        retried, jobs, warned = retry_definition(found, [(s.name, s.status) for s in detail.stages])
    except NothingToRetry as error:
        raise Conflict(f"workflow {detail.id}: {error}") from None
    workflow_id, notes = await submit_again(
        request, detail, retried, detail.name if wanted.name is None else wanted.name,
        detail.priority if wanted.priority is None else wanted.priority, {RETRY_OF: str(detail.id)})
    notes = [Problem(path=w.path, message=w.message) for w in warned] + notes
    return c.json(WorkflowRetried(id=str(workflow_id), retry_of=str(detail.id), jobs=jobs, warnings=notes), status=201)


routes = [
    Route("/v4/workflows/{id}/definition", definition, methods=["GET"]),
    Route("/v4/workflows/{id}:resubmit", resubmit, methods=["POST"]),
    Route("/v4/workflows/{id}:retry", retry, methods=["POST"]),
]
