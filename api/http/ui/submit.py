"""The UI acts: submit a Fuzzfile (pasted or uploaded, checked as you type by the API's own validate handler), stop a
workflow, submit one again (as it was, or edited in the same form), retry a failed one's unfinished jobs. Each calls
the API route's handler as the signed-in user, so the UI may do exactly what the API lets that user do, and says why
when it may not."""

from __future__ import annotations

from typing import Any

import msgspec
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from api.http.routes import resubmit as again
from api.http.routes import workflows
from api.http.ui import render
from api.http.ui.core import api, csrf_for, with_json
from domain.tenancy.permissions import Principal

EXAMPLE = """version: v4
jobs:
  hello:
    image: {uri: docker://alpine:3.20}
    command: [echo, hello]
    resource: {cpu: {cores: 1}, memory: {size: 256MiB}}
"""


def form_page(request: Request, who: Principal, text: str = "", name: str = "", problems: str = "",
              status_code: int = 200, source: dict[str, Any] | None = None) -> Response:
    """The submit form; with `source` (a workflow's id and name), the form that submits an edit of it again."""
    action = f"/ui/workflows/{source['id']}/edit" if source else "/ui/submit"
    body = render.fill("submit", csrf=render.hidden_csrf(csrf_for(request)), definition=text or EXAMPLE, name=name,
                       problems=problems, action=action, source=(source or {}).get("id", ""),
                       source_name=(source or {}).get("name") or (source or {}).get("id", ""))
    title = f"Edit and resubmit {source['name'] or source['id']}" if source else "Submit a workflow"
    return render.page(title, body, user=who, csrf=csrf_for(request), current="/ui/workflows",
                       status_code=status_code, script="submit.js")


async def submit_page(request: Request, who: Principal) -> Response:
    return form_page(request, who)


def problem_list(found: dict[str, Any]) -> render.Html:
    items = [(kind[:-1], f"{p['path']}: " if p["path"] else "", p["message"])
             for kind in ("errors", "warnings") for p in found.get(kind, [])]
    return render.Html(render.macro("problems")(items))


async def submit(request: Request, who: Principal) -> Response:
    """Validate first, so a refused file comes back with every problem beside it; then submit and show the run."""
    fields = request.state.form
    text, name = fields.get("definition", ""), fields.get("name", "").strip()
    found = await api(workflows.validate, with_json(request, {"definition": text}))
    if found["errors"]:
        return form_page(request, who, text, name, problem_list(found), status_code=400)
    created = await api(workflows.submit, with_json(request, {"definition": text, "name": name}))
    return RedirectResponse(f"/ui/workflows/{created['id']}", status_code=303)


async def validate(request: Request, who: Principal) -> Response:
    """What POST /v4/workflows:validate answers for the form's text (the submit page asks as you type)."""
    found = await api(workflows.validate, with_json(request, {"definition": request.state.form.get("definition", "")}))
    return Response(msgspec.json.encode(found), media_type="application/json", headers={"Cache-Control": "no-store"})


async def stop(request: Request, who: Principal) -> Response:
    await api(workflows.stop, request)
    return RedirectResponse(f"/ui/workflows/{request.path_params['id']}?done=stopped", status_code=303)


async def resubmit(request: Request, who: Principal) -> Response:
    """The same definition and name, as a new workflow of the signed-in user (who must be able to see the old one)."""
    created = await api(again.resubmit, with_json(request, {}))
    return RedirectResponse(f"/ui/workflows/{created['id']}?done=resubmitted", status_code=303)


async def retry(request: Request, who: Principal) -> Response:
    """A failed workflow's jobs that did not finish, as a new workflow of the signed-in user."""
    created = await api(again.retry, with_json(request, {}))
    return RedirectResponse(f"/ui/workflows/{created['id']}?done=retried", status_code=303)


async def edit_page(request: Request, who: Principal) -> Response:
    """The submit form prefilled with the workflow's Fuzzfile and name, submitting to the API's resubmit."""
    found = await api(again.definition, request)
    return form_page(request, who, found["definition"], found["name"], source=found)


async def resubmit_edited(request: Request, who: Principal) -> Response:
    """The edited Fuzzfile checked first (a refused one comes back in the form with its problems), then resubmitted."""
    fields = request.state.form
    text, name = fields.get("definition", ""), fields.get("name", "").strip()
    source = await api(again.definition, request)
    found = await api(workflows.validate, with_json(request, {"definition": text}))
    if found["errors"]:
        return form_page(request, who, text, name, problem_list(found), status_code=400, source=source)
    created = await api(again.resubmit, with_json(request, {"definition": text, "name": name}))
    return RedirectResponse(f"/ui/workflows/{created['id']}?done=resubmitted", status_code=303)
