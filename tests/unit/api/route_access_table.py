"""ROUTES: one row for every route of the app, saying who may call it and with which ids.

A row names the callers whose request on organization A's (or the cluster's) own things succeeds (`who`;
everyone else is refused), that request (`own`; None: the bare path) and, for a route that names a tenant's
ids, the same request naming organization B's (`foreign`), or CLUSTER when its ids are the cluster's own.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

from tests.unit.api.harness import JOB, PASSWORD
from tests.unit.api.route_access_world import ADMIN, AGENT, ANYONE, OWNER, USER, WEBHOOK, Call, World

Build = Callable[[World], Call]
PUBLIC, EVERYONE, OWNERS, ADMINS = {ANYONE}, {USER, OWNER, ADMIN}, {OWNER, ADMIN}, {ADMIN}
AGENTS, ALERTERS = {AGENT, ADMIN}, {WEBHOOK, ADMIN}
CLUSTER = "nodes and federated workflows are the cluster's, not a tenant's"
PROFILES = "application profiles are the cluster's, not a tenant's"
OWN = "object://user/ names the caller's own objects: there is no one else's to name"
PROVISIONERS = "provisioners are the cluster's, not a tenant's"
PROJECTS = "projects and presets are the cluster's, not a tenant's"
PROXIED, FB = "DELETE GET OPTIONS PATCH POST PUT", "FB-Authorization"  # HEAD follows GET, as everywhere
ALERT = {"version": "4", "status": "firing", "alerts": []}
PROVISIONER = {"provider": "local", "template": {"cpu": 4, "memory": "4GiB"}, "maxNodes": 2, "idleSeconds": 20}


class Row(NamedTuple):
    methods: str                         # as the route declares them, space-separated
    path: str                            # the route's template, as Starlette has it
    who: set[str]                        # callers whose `own` request succeeds; the others get 403 or 404
    own: Build | None = None
    foreign: Build | str | None = None
    ok: tuple[int, ...] = (200, 201)     # what success looks like

    def own_call(self, world: World) -> Call:
        return self.own(world) if self.own else Call(self.path)


def both(template: str, body: Callable[[Any], Any] = lambda t: None, auth: str = "Authorization") -> dict[str, Build]:
    """`own` on organization A's things and `foreign` on B's, from one template over a tenant `t`."""
    return {"own": lambda w: Call(template.format(t=w.a), body(w.a), auth),
            "foreign": lambda w: Call(template.format(t=w.b), body(w.b), auth)}


def posix_id(owner: Any) -> int:
    """A distinct id for each tenant's user or group, outside the allocated ranges."""
    return 5000 + int(str(owner).replace("-", "")[:6], 16) % 90000


def node_route(suffix: str, body: Any = None) -> dict[str, Any]:
    return {"own": lambda w: Call(f"/v4/nodes/{w.node()['node_id']}{suffix}", body), "foreign": CLUSTER}


def refresh_token(world: World) -> str:
    """A refresh token of a fresh login (each is good for one refresh)."""
    login = world.api.request("POST", "/v4/auth/login", json={"username": "erin", "password": PASSWORD})
    return str(login.json()["refresh_token"])


ROUTES = [
    Row("GET", "/healthz", PUBLIC),
    Row("GET", "/readyz", PUBLIC),
    Row("GET", "/metrics", PUBLIC),
    Row("GET", "/v4/openapi.json", PUBLIC),
    Row("GET", "/v4/version", PUBLIC),
    Row("GET", "/v4/docs", PUBLIC),
    Row("GET", "/v4/docs/start.js", PUBLIC),
    Row("GET", "/v4/docs/static/{file}", PUBLIC, lambda w: Call("/v4/docs/static/swagger-ui.css"), foreign=CLUSTER),
    Row("POST", "/v4/auth/login", PUBLIC, lambda w: Call("/v4/auth/login", {"username": "erin", "password": PASSWORD})),
    Row("POST", "/v4/auth/refresh", PUBLIC, lambda w: Call("/v4/auth/refresh", {"refresh_token": refresh_token(w)})),
    Row("GET", "/v4/auth/whoami", EVERYONE),
    Row("POST", "/v4/auth/logout", EVERYONE, lambda w: Call("/v4/auth/logout", fresh=True)),
    Row("POST", "/v4/auth/revoke", ADMINS, lambda w: Call("/v4/auth/revoke", {"jti": w.fresh("jti")})),
    # each caller changes their own password once; a fresh token, as after signing in again
    Row("POST", "/v4/users/me/password", EVERYONE, lambda w: Call("/v4/users/me/password", {
        "current_password": PASSWORD, "new_password": PASSWORD + "-next"}, fresh=True)),
    Row("POST", "/v4/workflows", EVERYONE, lambda w: Call("/v4/workflows", {"definition": JOB})),
    Row("GET", "/v4/workflows", EVERYONE),
    Row("POST", "/v4/workflows:validate", EVERYONE, lambda w: Call("/v4/workflows:validate", {"definition": JOB})),
    Row("PATCH POST", "/v4/workflows/{id}:stop", EVERYONE, lambda w: Call(f"/v4/workflows/{w.submit()}:stop"),
        lambda w: Call(f"/v4/workflows/{w.b.workflow}:stop")),
    Row("GET", "/v4/workflows/{id}", EVERYONE, **both("/v4/workflows/{t.workflow}")),
    Row("GET", "/v4/workflows/{id}/events", EVERYONE, **both("/v4/workflows/{t.workflow}/events")),
    Row("GET", "/v4/workflows/{id}/log/{stage}", EVERYONE, **both("/v4/workflows/{t.workflow}/log/hello")),
    # submitting again reads the workflow as describe does; the new workflow is the caller's own
    Row("GET", "/v4/workflows/{id}/definition", EVERYONE, **both("/v4/workflows/{t.workflow}/definition")),
    Row("POST", "/v4/workflows/{id}:resubmit", EVERYONE, **both("/v4/workflows/{t.workflow}:resubmit", lambda t: {})),
    # the world's workflows have not ended: one who may see it hears 409 (retry it once it has ended), others 404
    Row("POST", "/v4/workflows/{id}:retry", EVERYONE, **both("/v4/workflows/{t.workflow}:retry", lambda t: {}),
        ok=(409,)),
    # explaining needs explain_allocation, which an organization's owner does not hold by owning it
    # a workflow's token ends with it by its owner's (or a cluster admin's) word; a groupmate only sees the work
    Row("POST", "/v4/workflows/{id}/token:revoke", {USER, ADMIN}, **both("/v4/workflows/{t.workflow}/token:revoke")),
    Row("GET", "/v4/workflows/{id}/why", {USER, ADMIN}, **both("/v4/workflows/{t.workflow}/why")),
    Row("GET", "/v4/workflows/{id}/allocations/{aid}/explain", {USER, ADMIN},
        **both("/v4/workflows/{t.workflow}/allocations/{t.allocation}/explain")),
    Row("GET", "/v4/scheduler/queue", EVERYONE),
    Row("GET", "/v4/scheduler/stats", EVERYONE),
    Row("GET", "/v4/nodes", EVERYONE),
    Row("GET", "/v4/nodes/-/sd_config", EVERYONE | {WEBHOOK}),
    Row("GET", "/v4/endpoints/-/sd_config", ALERTERS),  # every tenant's replicas, by workflow: monitoring's only
    # the world's nodes serve no metrics: let in, a caller hears so (404); the answers are in test_node_metrics_route
    Row("GET", "/v4/metrics/node/{node}", ALERTERS, lambda w: Call(f"/v4/metrics/node/{w.node()['node_id']}"),
        CLUSTER, ok=(404,)),
    Row("GET", "/v4/nodes/{id}", EVERYONE, **node_route("")),  # reading nodes is everyone's; managing them is not
    Row("DELETE", "/v4/nodes/{id}", ADMINS, lambda w: Call(f"/v4/nodes/{w.offline_node()}"), CLUSTER),
    Row("POST", "/v4/nodes/{id}/cordon", ADMINS, **node_route("/cordon", {"reason": "bios"})),
    Row("POST", "/v4/nodes/{id}/uncordon", ADMINS, **node_route("/uncordon")),
    Row("POST", "/v4/nodes/{id}/evict", ADMINS, **node_route("/evict", {"reason": "bios"})),
    Row("POST", "/v4/nodes/{id}/deprovision", ADMINS, **node_route("/deprovision")),
    Row("GET", "/v4/nodes/{id}/events", EVERYONE, **node_route("/events")),
    Row("GET", "/v4/nodes/{id}/holds", EVERYONE, **node_route("/holds")),
    Row("POST", "/v4/nodes/{id}/holds", ADMINS, **node_route("/holds", {"effect": "cordon"})),
    Row("DELETE", "/v4/nodes/{id}/holds/{hold}", ADMINS, lambda w: Call(w.held_node()), CLUSTER),
    Row("GET", "/v4/nodes/{id}/credentials", ADMINS, **node_route("/credentials")),
    Row("POST", "/v4/nodes/{id}/readmit", ADMINS, **node_route("/readmit")),
    Row("DELETE", "/v4/nodes/{id}/credentials/{credential}", ADMINS,
        lambda w: Call(f"/v4/nodes/{(n := w.node())['node_id']}/credentials/{n['credential_id']}"), CLUSTER),
    Row("POST", "/v4/alerts", ALERTERS, lambda w: Call("/v4/alerts", ALERT)),
    Row("POST", "/v4/organizations", ADMINS, lambda w: Call("/v4/organizations", {"name": w.fresh("org")})),
    Row("GET", "/v4/organizations", EVERYONE),
    Row("GET", "/v4/organizations/{id}", EVERYONE, **both("/v4/organizations/{t.org}")),
    Row("POST", "/v4/organizations/{id}/users", OWNERS,
        lambda w: Call(f"/v4/organizations/{w.a.org}/users", w.new_user(w.a)),
        lambda w: Call(f"/v4/organizations/{w.b.org}/users", w.new_user(w.b))),
    Row("GET", "/v4/organizations/{id}/users", EVERYONE, **both("/v4/organizations/{t.org}/users")),
    Row("POST", "/v4/organizations/{id}/groups", OWNERS,
        lambda w: Call(f"/v4/organizations/{w.a.org}/groups", {"name": w.fresh("g")}),
        lambda w: Call(f"/v4/organizations/{w.b.org}/groups", {"name": w.fresh("g")})),
    Row("GET", "/v4/organizations/{id}/groups", EVERYONE, **both("/v4/organizations/{t.org}/groups")),
    Row("PUT", "/v4/organizations/{id}/priority", ADMINS, **both("/v4/organizations/{t.org}/priority",
                                                                 lambda t: {"priority": 3})),
    Row("GET", "/v4/groups/{id}", EVERYONE, **both("/v4/groups/{t.group}")),
    Row("PUT", "/v4/groups/{id}/priority", OWNERS, **both("/v4/groups/{t.group}/priority", lambda t: {"priority": 2})),
    Row("PUT", "/v4/groups/{id}/preempt", OWNERS, **both("/v4/groups/{t.group}/preempt", lambda t: {"groups": []})),
    Row("PUT", "/v4/groups/{id}/members/{user}", OWNERS, **both("/v4/groups/{t.group}/members/{t.member}")),
    Row("DELETE", "/v4/groups/{id}/members/{user}", OWNERS,
        lambda w: Call(f"/v4/groups/{w.a.group}/members/{w.member_to_remove()}"),
        lambda w: Call(f"/v4/groups/{w.b.group}/members/{w.b.member}")),
    # explain_allocation opens other people's queue entries: the organization's owners grant it, not group owners
    Row("PUT", "/v4/groups/{id}/explainers/{user}", OWNERS, **both("/v4/groups/{t.group}/explainers/{t.member}")),
    Row("DELETE", "/v4/groups/{id}/explainers/{user}", OWNERS, lambda w: Call(w.grant_explain(w.a.group, "carol")),
        lambda w: Call(f"/v4/groups/{w.b.group}/explainers/{w.b.member}")),
    Row("POST", "/v4/users/{id}/unlock", OWNERS, **both("/v4/users/{t.member}/unlock")),
    Row("PUT", "/v4/users/{id}/priority", OWNERS, **both("/v4/users/{t.member}/priority", lambda t: {"priority": 1})),
    Row("GET", "/v4/users/{id}", EVERYONE, **both("/v4/users/{t.member}")),
    # a uid is an identity on every node: cluster admins only; each tenant's member gets its own number
    Row("PUT", "/v4/users/{id}/uid", ADMINS, **both("/v4/users/{t.member}/uid", lambda t: {"uid": posix_id(t.member)})),
    Row("PUT", "/v4/groups/{id}/gid", ADMINS, **both("/v4/groups/{t.group}/gid", lambda t: {"gid": posix_id(t.group)})),
    Row("POST", "/v4/secrets", EVERYONE, lambda w: Call("/v4/secrets", {"name": w.fresh("s"), "value": "v"})),
    Row("GET", "/v4/secrets", EVERYONE),
    # a user-scope secret is its owner's alone: anyone else is told it does not exist
    Row("DELETE", "/v4/secrets/{id}", {USER}, lambda w: Call(w.secret("alice")), lambda w: Call(w.secret("bob"))),
    Row("POST", "/v4/secrets/-/rotate-key", ADMINS),
    # catalog sources: the cluster's are every person's, an organization's its members' (its owners manage them);
    # a folder source reads the control plane's disk, so only a cluster admin adds one
    Row("GET", "/v4/catalog", EVERYONE),
    Row("GET", "/v4/catalog/sources", EVERYONE),
    Row("POST", "/v4/catalog/sources", ADMINS, lambda w: Call("/v4/catalog/sources", {
        "name": w.fresh("src"), "location": w.catalog_folder(), "scope": "cluster"})),
    Row("DELETE", "/v4/catalog/sources/{id}", OWNERS, lambda w: Call(f"/v4/catalog/sources/{w.catalog_source(w.a)}"),
        lambda w: Call(f"/v4/catalog/sources/{w.b.source}")),
    # a fetch on demand is its managers' (members wait for its refresh time: no one makes the server hammer a repository)
    Row("POST", "/v4/catalog/sources/{id}:refresh", OWNERS, lambda w: Call(f"/v4/catalog/sources/{w.a.source}:refresh"),
        lambda w: Call(f"/v4/catalog/sources/{w.b.source}:refresh")),
    Row("GET", "/v4/catalog/templates/{name}", EVERYONE, lambda w: Call(f"/v4/catalog/templates/{w.a.app}"),
        lambda w: Call(f"/v4/catalog/templates/{w.b.app}")),
    Row("POST", "/v4/catalog/templates/{name}:render", EVERYONE,
        lambda w: Call(f"/v4/catalog/templates/{w.shared_app}:render", {}),
        lambda w: Call(f"/v4/catalog/templates/{w.b.app}:render", {})),
    Row("POST", "/v4/catalog/templates/{name}:start", EVERYONE,
        lambda w: Call(f"/v4/catalog/templates/{w.shared_app}:start", {}),
        lambda w: Call(f"/v4/catalog/templates/{w.b.app}:start", {})),
    # object://user/ is always the caller's own; a group's objects are its members' and its organization's owners'
    Row("GET", "/v4/objects", EVERYONE),
    Row("PUT", "/v4/objects/user/{name:path}", EVERYONE, lambda w: Call(f"/v4/objects/user/{w.fresh('o')}"), OWN),
    Row("GET", "/v4/objects/user/{name:path}", EVERYONE, lambda w: Call(w.own_objects()), OWN),
    Row("DELETE", "/v4/objects/user/{name:path}", EVERYONE, lambda w: Call(w.own_objects()), OWN),
    Row("PUT", "/v4/objects/group/{group}/{name:path}", {USER, OWNER},
        lambda w: Call(f"/v4/objects/group/lab/{w.fresh('o')}"), lambda w: Call(f"/v4/objects/group/ops/{w.fresh('o')}")),
    Row("GET", "/v4/objects/group/{group}/{name:path}", {USER, OWNER}, lambda w: Call(w.group_object("lab", "alice")),
        lambda w: Call(w.group_object("ops", "bob"))),
    Row("DELETE", "/v4/objects/group/{group}/{name:path}", {USER, OWNER},
        lambda w: Call(w.group_object("lab", "alice")), lambda w: Call(w.group_object("ops", "bob"))),
    # profiles are the cluster's: cluster admins set and delete them, every user reads them (they hold no secrets)
    Row("GET", "/v4/profiles", EVERYONE),
    Row("PUT", "/v4/profiles/{name}", ADMINS, lambda w: Call(f"/v4/profiles/{w.fresh('p')}", {"env": {"A": "1"}}),
        PROFILES),
    Row("GET", "/v4/profiles/{name}", EVERYONE, lambda w: Call(w.profile()), PROFILES),
    Row("DELETE", "/v4/profiles/{name}", ADMINS, lambda w: Call(w.profile()), PROFILES),
    # provisioners are the cluster's: cluster admins define and delete them, every user reads them (as nodes)
    Row("GET", "/v4/provisioners", EVERYONE),
    Row("PUT", "/v4/provisioners/{name}", ADMINS, lambda w: Call(f"/v4/provisioners/{w.fresh('p')}", PROVISIONER),
        PROVISIONERS),
    Row("GET", "/v4/provisioners/{name}", EVERYONE, lambda w: Call(w.provisioner()), PROVISIONERS),
    Row("DELETE", "/v4/provisioners/{name}", ADMINS, lambda w: Call(w.provisioner()), PROVISIONERS),
    # volume provisioners are the cluster's and name every organization's volumes: cluster admins alone, reads too
    Row("GET", "/v4/volume-provisioners", ADMINS),
    Row("PUT", "/v4/volume-provisioners/{name}", ADMINS, lambda w: Call(
        f"/v4/volume-provisioners/{(n := w.fresh('vp'))}", {"class": n, "program": "/opt/site/make-volume",
                                                           "root": "/lustre/roving"}), PROVISIONERS),
    Row("GET", "/v4/volume-provisioners/{name}", ADMINS, lambda w: Call(w.volume_provisioner()), PROVISIONERS),
    Row("DELETE", "/v4/volume-provisioners/{name}", ADMINS, lambda w: Call(w.volume_provisioner()), PROVISIONERS),
    # projects are cluster policy: admins make and change them; a user sees those they belong to (all are in common)
    Row("GET", "/v4/projects", EVERYONE),
    Row("GET", "/v4/projects/{path:path}", EVERYONE, lambda w: Call("/v4/projects/common"), PROJECTS),
    Row("PUT", "/v4/projects/{path:path}", ADMINS, lambda w: Call(f"/v4/projects/{w.fresh('p')}", {
        "quota": {"cpu": 4}, "members": ["alice"]}), PROJECTS),
    Row("PATCH", "/v4/projects/{path:path}", ADMINS, lambda w: Call("/v4/projects/common", {}), PROJECTS),
    Row("DELETE", "/v4/projects/{path:path}", ADMINS, lambda w: Call(w.project()), PROJECTS, ok=(204,)),
    Row("PUT", "/v4/groups/{id}/project", OWNERS, **both("/v4/groups/{t.group}/project", lambda t: {"project": "common"})),
    Row("GET", "/v4/scheduler/shared-resources", EVERYONE),
    Row("GET", "/v4/presets", EVERYONE),
    Row("GET", "/v4/presets/{name}", EVERYONE, lambda w: Call("/v4/presets/gpu"), PROJECTS),
    Row("GET", "/v4/admin/centralconfig", ADMINS),
    Row("PUT", "/v4/admin/centralconfig", ADMINS, lambda w: Call("/v4/admin/centralconfig", {})),
    Row("POST", "/v4/agent/register", AGENTS, lambda w: Call("/v4/agent/register", {
        "name": w.fresh("n"), "cpu": 1, "memory": 2**30})),
    Row("POST", "/v4/agent/heartbeat", AGENTS, lambda w: Call("/v4/agent/heartbeat", {
        "node_id": (n := w.node())["node_id"], "epoch": n["epoch"]})),
    Row("GET", "/v4/agent/assignments", AGENTS, lambda w: Call(f"/v4/agent/assignments?node_id={w.node()['node_id']}")),
    Row("POST", "/v4/agent/reports", AGENTS, lambda w: Call("/v4/agent/reports", w.running_report())),
    Row("POST", "/v4/agent/reports:batch", AGENTS, lambda w: Call("/v4/agent/reports:batch", {
        "node_id": (r := w.running_report())["node_id"], "reports": [r]})),
    Row("GET", "/v4/agent/config", AGENTS),
    Row("GET", "/v4/audit", OWNERS),
    Row("POST", "/v4/audit/query", OWNERS, lambda w: Call("/v4/audit/query", {"sql": "SELECT count(*) FROM audit"})),
    Row("GET", "/v4/audit/export.parquet", OWNERS),
    # this world's audit runs no retention, so an admin is told so; tests/integration/test_retention.py has the 200
    Row("GET", "/v4/audit/retention", ADMINS, ok=(503,)),
    Row("POST", "/v4/endpoints", EVERYONE, lambda w: Call("/v4/endpoints", {"name": w.fresh("ep")}),
        lambda w: Call("/v4/endpoints", {"name": w.fresh("ep"), "scope": "organization", "owner_kind": "organization",
                                         "owner_id": w.b.org})),
    Row("GET", "/v4/endpoints", EVERYONE),
    Row("GET", "/v4/endpoints/{id}", EVERYONE, **both("/v4/endpoints/{t.endpoint.id}")),
    # only the endpoint's owner (alice) manages it; her organization's owner sees it but may not delete it
    Row("DELETE", "/v4/endpoints/{id}", {USER, ADMIN},
        lambda w: Call(f"/v4/endpoints/{w.endpoint('alice', w.fresh('ep'), 'organization').id}"),
        lambda w: Call(f"/v4/endpoints/{w.b.endpoint.id}")),
    Row("GET", "/v4/federation/status", ADMINS),
    Row("GET", "/v4/federation/queue/stats", ADMINS),
    Row("GET", "/v4/federation/workflows", ADMINS),
    Row("GET", "/v4/federation/workflows/{id}/events", ADMINS,
        lambda w: Call(f"/v4/federation/workflows/{w.hub_ids['c1'][0]}/events"), CLUSTER),
    Row("GET", "/v4/federation/workflows/{id}", ADMINS,
        lambda w: Call(f"/v4/federation/workflows/{w.hub_ids['c1'][0]}"), CLUSTER),
    # the proxy checks its caller itself; a bound-to-nothing endpoint answers 503 once the caller may use it
    Row(PROXIED, "/endpoints/{key}/{path:path}", EVERYONE, ok=(503,),
        **both("/endpoints/{t.endpoint.name}/x", auth=FB)),
    Row(PROXIED, "/endpoints/{key}", EVERYONE, ok=(503,), **both("/endpoints/{t.endpoint.name}", auth=FB)),
]
