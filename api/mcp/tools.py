"""What `roving mcp`'s tools do: each asks the HTTP API as the caller's context (their token), like the CLI, and
answers a dict an assistant can read. A refusal the user can act on comes back as the server's words (ToolError);
`workflow_validate` never fails for want of a server: it checks locally and says the server could not be asked.
"""

from __future__ import annotations

from typing import Annotated, Any
from urllib.parse import quote

from mcp.server.mcpserver.exceptions import ToolError
from pydantic import Field

from api.cli.client import ApiError, Client

MAX_LOG_CHARS = 200_000
Fuzzfile = Annotated[str, Field(description="the Fuzzfile's YAML text")]
TemplateName = Annotated[str, Field(description="the template's name, or SOURCE/NAME")]
SourceName = Annotated[str, Field(description="the catalog source, when several have the name")]
Values = Annotated[dict[str, Any] | None, Field(description="the template's values, NAME: value (others keep "
                                                            "their defaults)")]
WorkflowId = Annotated[str, Field(description="the workflow's id")]


class Refused(ToolError):
    """The API refused or could not be reached: the message (the server's words) reaches the assistant."""


class RovingTools:
    def __init__(self, client: Client) -> None:
        self.client = client

    def _ask(self, method: str, path: str, **kwargs: Any) -> Any:
        try:
            return self.client.request(method, path, **kwargs)
        except ApiError as error:
            raise Refused(str(error)) from None

    def workflow_validate(
        self,
        definition: Fuzzfile,
        cluster_id: Annotated[str, Field(description="the cluster to check against (default: the one your context "
                                                     "talks to)")] = "",
    ) -> dict[str, Any]:
        """Check a Fuzzfile without starting it: the same checks submission makes, asked of the cluster. Answers valid
        (true or false), errors and warnings (each with its path and message; when valid is false the errors are the
        server's reasons) and checked_by. If the server could not be asked, the Fuzzfile is checked locally with the
        same parser and `warning` says why the server was not asked."""
        from domain.fuzzfile import parse_fuzzfile

        parsed = parse_fuzzfile(definition)
        local = {"valid": not parsed.errors, "errors": _problems(parsed.errors), "warnings": _problems(parsed.warnings),
                 "checked_by": "local"}
        if parsed.errors:
            return local  # the server parses with the same parser: it would say the same
        params = {"cluster": cluster_id} if cluster_id else None
        try:
            answer = self.client.request("POST", "/v4/workflows:validate", json={"definition": definition},
                                         params=params)
        except ApiError as error:
            return {**local, "warning": f"the server could not be asked, so this was checked locally only: {error}"}
        return {"valid": bool(answer["valid"]), "errors": answer["errors"], "warnings": answer["warnings"],
                "checked_by": "server" + (f" (cluster {cluster_id})" if cluster_id else "")}

    def catalog_list(
        self,
        query: Annotated[str, Field(description="words to search for; empty lists all")] = "",
        category: Annotated[str, Field(description="only this category or display category")] = "",
    ) -> dict[str, Any]:
        """Search the application catalog you can see (your groups', your organization's and the cluster's sources).
        Words match names, titles, descriptions, categories, tags and inputs. A source that cannot be read is named
        in `warnings`; the other sources' templates are still listed."""
        answer = self._ask("GET", "/v4/catalog", params={k: v for k, v in (("q", query), ("category", category)) if v})
        unread = [f"catalog source {s['name']} ({s['scope']}) could not be read: {s['error']}"
                  for s in answer["sources"] if s["error"]]
        problems = [f"catalog source {s['name']}: {p['path']}: {p['message']}" for s in answer["sources"]
                    for p in s["problems"]]
        return {"templates": answer["templates"], "sources": answer["sources"], "warnings": unread + problems}

    def catalog_show(self, name: TemplateName, source: SourceName = "") -> dict[str, Any]:
        """One catalog template: its Markdown description, its inputs grouped by display_category (name, kind, default,
        options; secret and volume inputs marked optional may be left unset) and its template text."""
        name, source = _named(name, source)
        return dict(self._ask("GET", _template(name), params={"source": source} if source else None))

    def catalog_render(self, name: TemplateName, values: Values = None, source: SourceName = "") -> dict[str, Any]:
        """Render a catalog template with values into the Fuzzfile it makes (nothing is started). Values are NAME:
        value; left out, an input keeps its default. A legacy v1 template comes back upgraded to v4."""
        name, source = _named(name, source)
        return dict(self._ask("POST", _template(name, ":render"), json={"values": values or {}, "source": source}))

    def catalog_start(
        self,
        name: TemplateName,
        values: Values = None,
        source: SourceName = "",
        workflow_name: Annotated[str, Field(description="the workflow's name")] = "",
    ) -> dict[str, Any]:
        """Render a catalog template with values and start the Fuzzfile as a workflow you own; answers its id."""
        name, source = _named(name, source)
        body = {"values": values or {}, "source": source, "name": workflow_name}
        return dict(self._ask("POST", _template(name, ":start"), json=body))

    def group_list(
        self,
        organization_id: Annotated[str, Field(description="the organization (default: yours)")] = "",
        mine: Annotated[bool, Field(description="only the groups you are a member of")] = False,
    ) -> dict[str, Any]:
        """List groups. By default: every group of your own organization, including groups you are not a member of
        (`member` says whether you are). mine=true lists only the groups you belong to. A cluster admin, who belongs
        to no organization, names one with organization_id."""
        me = self._ask("GET", "/v4/auth/whoami")
        organization = organization_id or me.get("organization_id") or ""
        if not organization:
            raise Refused("you belong to no organization (a cluster admin): name one with organization_id")
        groups = self._ask("GET", f"/v4/organizations/{quote(organization, safe='')}/groups")["groups"]
        if mine:
            groups = [g for g in groups if str(g["id"]) in set(me.get("groups") or [])]
        rows = [{"id": g["id"], "name": g["name"], "priority": g["priority"],
                 "member": str(g["id"]) in set(me.get("groups") or []), "members": len(g["members"])} for g in groups]
        return {"organization_id": organization, "scope": "your groups" if mine else "every group of the organization",
                "groups": rows}

    def workflow_start(
        self,
        definition: Fuzzfile,
        name: Annotated[str, Field(description="the workflow's name")] = "",
        priority: Annotated[int, Field(description="its own priority (0 or lower)")] = 0,
    ) -> dict[str, Any]:
        """Start a Fuzzfile as a workflow you own; answers its id and the submission's warnings. Validate first."""
        answer = self._ask("POST", "/v4/workflows", json={"definition": definition, "name": name or "mcp",
                                                         "priority": priority})
        return {"id": answer["id"], "warnings": answer.get("warnings", [])}

    def workflow_status(self, workflow_id: WorkflowId) -> dict[str, Any]:
        """A workflow's status and each stage's status, node, attempts, exit code and reason."""
        detail = self._ask("GET", f"/v4/workflows/{quote(workflow_id, safe='')}")
        keep = ("id", "name", "status", "submitted_by", "submitted_at", "stages", "cluster")
        return {k: detail[k] for k in keep if k in detail}

    def workflow_why(
        self,
        workflow_id: WorkflowId,
        include_all: Annotated[bool, Field(description="also stages that run or ended")] = False,
    ) -> dict[str, Any]:
        """Why a workflow's stages are waiting: the scheduler's reason for each (resources, quota, holds, dependencies)
        with its estimated start where known."""
        answer = self._ask("GET", f"/v4/workflows/{quote(workflow_id, safe='')}/why",
                           params={"all": "true"} if include_all else None)
        return {"workflow_id": workflow_id, "stages": answer["stages"]}

    def workflow_logs(
        self,
        workflow_id: WorkflowId,
        stage: Annotated[str, Field(description="the stage's name, e.g. a job's name")],
        tail_lines: Annotated[int, Field(description="how many last lines (0: all)")] = 200,
    ) -> dict[str, Any]:
        """A stage's output (standard output and error as the job wrote them), its last lines."""
        text = self._ask("GET", f"/v4/workflows/{quote(workflow_id, safe='')}/log/{quote(stage, safe='')}")
        text = text if isinstance(text, str) else str(text)
        lines = text.splitlines()
        shown = "\n".join(lines[-tail_lines:]) if tail_lines > 0 else text
        return {"workflow_id": workflow_id, "stage": stage, "lines": len(lines),
                "truncated": len(shown) < len(text), "log": shown[-MAX_LOG_CHARS:]}


def _problems(problems: list[Any]) -> list[dict[str, str]]:
    return [{"path": p.path, "message": p.message} for p in problems]


def _named(name: str, source: str) -> tuple[str, str]:
    found, _, bare = name.rpartition("/")
    return bare, source or found


def _template(name: str, action: str = "") -> str:
    return f"/v4/catalog/templates/{quote(name, safe='')}{action}"
