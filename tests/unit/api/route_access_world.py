"""The world the route-access tests ask in: two organizations with owners, members, a group, work and endpoints.

Callers are named by role (`user`, `owner`, `admin`, `agent`, `webhook`) or by person (`carol`, `bob`...).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace
from typing import Any, NamedTuple
from uuid import UUID

import httpx
import msgspec
import pytest

from adapters.audit_feed import AuditFeed
from adapters.audit_log import AuditLog
from adapters.duckdb_store import AuditStore
from api.composition.settings import load_settings
from api.http.routes import federation
from domain.app.ids import user_id
from domain.tenancy import Role, Source
from projections.audit import AuditProjection
from tests.unit.api.harness import JOB, PASSWORD, Api, token, webhook_token
from tests.unit.api.test_federation_routes import HUB, hub_view

ANYONE, USER, OWNER, ADMIN, AGENT, WEBHOOK = "anyone", "user", "owner", "admin", "agent", "webhook"


class Call(NamedTuple):
    path: str
    json: Any = None
    auth: str = "Authorization"  # the endpoint proxy takes the caller's token in FB-Authorization
    fresh: bool = False  # a new token for the caller: the call spends it (logout revokes it)


class World:
    """Org A (acme): olga owns it; alice, carol and dave are in group `lab`, dave with explain_allocation on it;
    erin and frank are in no group. Org B (globex): bea owns it; bob is in group `ops`. Alice, olga and bob
    each run a workflow; alice and bob each have an organization-wide endpoint, bob also a public one.
    The audit log holds all of it; the federation hub is a fixed view with two member clusters."""

    def __init__(self, scratch: Path, patch: pytest.MonkeyPatch) -> None:
        self.api, self.names = Api(), itertools.count()
        self.store = AuditStore(scratch / "audit.duckdb")
        feed = AuditFeed(self.api.services.roving.recorder, AuditProjection(self.store, "test"))
        self.api.services.audit = AuditLog(self.store)
        (scratch / "presets").mkdir()
        (scratch / "presets" / "gpu.yaml").write_text("options: {priority: -1}\n")
        self.api.app.state.settings = msgspec.structs.replace(load_settings({}), federation_hub=HUB,
                                                              presets_dir=scratch / "presets")
        hub, self.hub_ids = hub_view()
        patch.setattr(federation, "load_view", lambda url: hub)
        self.a = self.tenant("acme", "olga", "lab", ["alice", "carol", "dave"], ["erin", "frank"])
        self.b = self.tenant("globex", "bea", "ops", ["bob"], [])
        self.grant_explain(self.a.group, "dave")
        # Every account belongs to the cluster's default project, so work that names none still runs once the
        # project rows have made more projects (open mode ends with the first one).
        everyone = [u for t in (self.a, self.b) for u in t.users]
        self.as_admin("PUT", "/v4/projects/common", {"members": everyone})
        self.as_admin("PUT", "/v4/admin/centralconfig", {"projects.default": "common"})
        self.tokens = {**self.a.tokens, **self.b.tokens, USER: self.a.tokens["alice"], OWNER: self.a.tokens["olga"],
                       ADMIN: self.api.admin, AGENT: token("agent", source=Source.AGENT), WEBHOOK: webhook_token()}
        self.minters = {**self.a.minters, **self.b.minters, USER: self.a.minters["alice"],
                        OWNER: self.a.minters["olga"], ADMIN: lambda: token("admin", Role.CLUSTER_ADMIN)}
        self.a.workflow, self.b.workflow = self.submit(), self.submit("bob")
        self.submit("olga")  # the owner's queue has rows of her own, and of her members' she must not see
        self.a.allocation, self.b.allocation = self.allocation(self.a.workflow), self.allocation(self.b.workflow)
        self.a.endpoint = self.endpoint("alice", "acme-wiki", "organization")
        self.b.endpoint = self.endpoint("bob", "globex-wiki", "organization")
        self.b.public = self.endpoint("bob", "globex-www", "public")
        self.scratch = scratch
        self.shared_app = self.catalog_app("shared-app")  # a cluster source's template: every person's
        self.a.app, self.a.source = self.catalog_app("acme-app", self.a), self.catalog_source(self.a)
        self.b.app, self.b.source = self.catalog_app("globex-app", self.b), self.catalog_source(self.b)
        while feed.read_page():
            pass

    def close(self) -> None:
        self.store.close()

    def send(self, method: str, call: Call, caller: str | None) -> httpx.Response:
        minted = call.fresh and caller in self.minters
        headers = {call.auth: f"Bearer {self.minters[caller]() if minted else self.tokens[caller]}"} if caller else {}
        return self.api.request(method, call.path, json=call.json, headers=headers)

    def catalog_folder(self, app: str = "app") -> str:
        """A folder with one catalog template named `app` (one job, no values)."""
        folder = self.scratch / "catalog" / self.fresh(app)
        folder.mkdir(parents=True)
        (folder / f"{app}.template.yaml").write_text(JOB)
        return str(folder)

    def catalog_source(self, tenant: Any = None, app: str = "app") -> str:
        """A new catalog source (its id) holding template `app`: the tenant's organization's, or the cluster's."""
        scope = {"scope": "organization", "owner": tenant.org} if tenant is not None else {"scope": "cluster"}
        body = {"name": self.fresh("src"), "location": self.catalog_folder(app), **scope}
        return str(self.as_admin("POST", "/v4/catalog/sources", body)["id"])

    def catalog_app(self, app: str, tenant: Any = None) -> str:
        self.catalog_source(tenant, app)
        return app

    def as_admin(self, method: str, path: str, body: Any = None) -> Any:
        answer = self.api.request(method, path, self.api.admin, json=body)
        assert answer.status_code in (200, 201), answer.text
        return answer.json()

    def tenant(self, name: str, owner: str, group: str, members: list[str], others: list[str]) -> SimpleNamespace:
        org = self.as_admin("POST", "/v4/organizations", {"name": name})["id"]
        t = SimpleNamespace(name=name, org=org, users={}, tokens={}, minters={})
        for username in [owner, *members, *others]:
            role = Role.ORG_OWNER if username == owner else Role.USER
            body = {"username": username, "email": f"{username}@{name}.org", "password": PASSWORD, "role": role.value}
            t.users[username] = self.as_admin("POST", f"/v4/organizations/{org}/users", body)["id"]
            t.minters[username] = lambda username=username, role=role: token(username, role, org=UUID(org))
            t.tokens[username] = t.minters[username]()
        t.group = self.as_admin("POST", f"/v4/organizations/{org}/groups", {"name": group})["id"]
        for username in members:
            self.as_admin("PUT", f"/v4/groups/{t.group}/members/{t.users[username]}", {"role": "member"})
        t.member = t.users[members[0]]
        return t

    def settle(self) -> None:
        self.api.services.tailer.wait_for(self.api.services.roving.last_position)

    def grant_explain(self, group: str, username: str) -> str:
        """Grant explain_allocation on the group through its route, as a cluster admin; the grant's path."""
        path = f"/v4/groups/{group}/explainers/{user_id(username)}"
        self.as_admin("PUT", path)
        return path

    def no_explain(self, group: str, username: str) -> None:
        """Take back a grant an earlier test left (the DELETE row grants carol, and a refused caller leaves it held),
        so a test of who may explain starts from the world's own grants whatever ran before it on this worker."""
        answer = self.api.request("DELETE", f"/v4/groups/{group}/explainers/{user_id(username)}", self.api.admin)
        assert answer.status_code in (200, 400), answer.text  # 400: not held
        self.settle()

    def fresh(self, prefix: str) -> str:
        return f"{prefix}{next(self.names)}"

    def submit(self, username: str = "alice") -> str:
        answer = self.api.request("POST", "/v4/workflows", self.tokens[username], json={"name": "w", "definition": JOB})
        assert answer.status_code == 201, answer.text
        return answer.json()["id"]

    def allocation(self, workflow: str) -> str:
        return self.as_admin("GET", f"/v4/workflows/{workflow}")["stages"][0]["allocation_id"]

    def endpoint(self, username: str, name: str, scope: str) -> SimpleNamespace:
        answer = self.api.request("POST", "/v4/endpoints", self.tokens[username], json={"name": name, "scope": scope})
        assert answer.status_code == 201, answer.text
        return SimpleNamespace(id=answer.json()["id"], name=name)

    def secret(self, username: str) -> str:
        """A new user-scope secret of `username`'s: the path to delete it by."""
        answer = self.api.request("POST", "/v4/secrets", self.tokens[username], json={"name": self.fresh("s"),
                                                                                       "value": "v"})
        assert answer.status_code == 201, answer.text
        return f"/v4/secrets/{answer.json()['id']}"

    def own_objects(self) -> str:
        """The path of a new object that the user, the owner and the admin each put in their own scope."""
        path = f"/v4/objects/user/{self.fresh('o')}"
        for caller in (USER, OWNER, ADMIN):
            answer = self.api.request("PUT", path, self.tokens[caller], content=b"mine")
            assert answer.status_code == 201, answer.text
        return path

    def group_object(self, group: str, username: str) -> str:
        """The path of a new object `username` put in `group`'s scope."""
        path = f"/v4/objects/group/{group}/{self.fresh('o')}"
        answer = self.api.request("PUT", path, self.tokens[username], content=b"ours")
        assert answer.status_code == 201, answer.text
        return path

    def project(self) -> str:
        """A new project under `common`, made by a cluster admin: its path."""
        path = f"/v4/projects/common/{self.fresh('p')}"
        self.as_admin("PUT", path, {"quota": {"cpu": 2}})
        return path

    def profile(self) -> str:
        """A new application profile, set by a cluster admin: its path."""
        path = f"/v4/profiles/{self.fresh('p')}"
        self.as_admin("PUT", path, {"env": {"LAB": "1"}})
        return path

    def provisioner(self) -> str:
        """A new provisioner, defined by a cluster admin: its path."""
        path = f"/v4/provisioners/{self.fresh('p')}"
        self.as_admin("PUT", path, {"provider": "local", "template": {"cpu": 2, "memory": "1GiB"}, "maxNodes": 1})
        return path

    def volume_provisioner(self) -> str:
        """A new volume provisioner, defined by a cluster admin: its path."""
        name = self.fresh("vp")
        path = f"/v4/volume-provisioners/{name}"
        self.as_admin("PUT", path, {"class": name, "program": "/opt/site/make-volume", "root": "/lustre/roving"})
        return path

    def node(self) -> dict[str, Any]:
        body = {"name": self.fresh("n"), "cpu": 4, "memory": 8 * 2**30, "definition": "local"}
        answer = self.api.request("POST", "/v4/agent/register", self.tokens[AGENT], json=body)
        assert answer.status_code == 200, answer.text
        return answer.json()

    def held_node(self) -> str:
        node = self.node()["node_id"]
        return f"/v4/nodes/{node}/holds/{self.as_admin('POST', f'/v4/nodes/{node}/holds', {})['hold_id']}"

    def offline_node(self) -> str:
        node = self.node()["node_id"]
        self.api.services.roving.node_lost(UUID(node), datetime.now(UTC))
        self.settle()
        return node

    def running_report(self) -> dict[str, Any]:
        """An agent's report on an allocation placed on its node, as the scheduler would have placed it."""
        allocation, node = self.allocation(self.submit()), self.node()
        roving = self.api.services.roving
        epoch = roving.place(UUID(allocation), [UUID(node["node_id"])], "scheduler", datetime.now(UTC))
        self.settle()
        return {"node_id": node["node_id"], "allocation_id": allocation, "epoch": epoch, "event": "started"}

    def member_to_remove(self) -> str:
        frank = self.a.users["frank"]
        self.as_admin("PUT", f"/v4/groups/{self.a.group}/members/{frank}", {"role": "member"})
        return frank

    def new_user(self, t: SimpleNamespace) -> dict[str, str]:
        name = self.fresh("user")
        return {"username": name, "email": f"{name}@{t.name}.org", "password": PASSWORD}

    def b_things(self) -> dict[str, str]:
        """Every id and name of organization B's, by what it is (its public endpoint aside)."""
        b = self.b
        return {"org": b.org, "group": b.group, "bob": b.users["bob"], "bea": b.users["bea"], "workflow": b.workflow,
                "allocation": b.allocation, "endpoint": b.endpoint.id, "endpoint_name": b.endpoint.name,
                "catalog_source": b.source, "catalog_app": b.app}


def opened(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    """The world for one test module's `world` fixture; closed, and the hub unpatched, after it."""
    with pytest.MonkeyPatch.context() as patch:
        built = World(tmp_path_factory.mktemp("audit"), patch)
        yield built
        built.close()
