"""Answers of the routes that name no `@answers` themselves (admin, catalog, objects, federation, projects,
profiles, provisioners, agents): the OpenAPI document types them from here, by operation (api.http.routes.openapi).

Where a part of an answer is a document the API passes through (a profile's resource, a provisioner's template, a
catalog template, a federated cluster's rows), it is an object of any keys; the answer around it is typed."""

from typing import Any

from api.http.answers.base import Answer, Problem, Timestamp


class Ok(Answer):
    ok: bool


class AuditRows(Answer):
    rows: list[dict[str, Any]]
    next: str | None = None  # pass back as `?next=` for the following page; None: this was the last


class AuditResult(Answer):
    columns: list[str]
    rows: list[list[Any]]
    truncated: bool


class KeyRotated(Answer):
    key_id: str
    resealed: int


class Profile(Answer):
    name: str
    revision: int
    env: dict[str, Any]
    resource: dict[str, Any]
    annotations: dict[str, Any]
    pre: Any
    post: Any
    hook_timeout: Any
    changed_by: str
    changed_at: Timestamp


class Profiles(Answer):
    profiles: list[Profile]


class ProfileDeleted(Answer):
    name: str
    deleted: bool
    revision: int


class Projects(Answer):
    projects: list[dict[str, Any]]


class Project(Answer):
    path: str


class GroupProjectSet(Answer):
    group: str
    default_project: str | None


class SharedResources(Answer):
    shared_resources: Any


class Presets(Answer):
    presets: list[dict[str, Any]]
    broken: list[Any] = []  # cluster admins only: files in the presets folder that are no preset


class Preset(Answer):
    name: str
    digest: str


class Provisioner(Answer):
    name: str
    provider: str
    nodes: list[dict[str, Any]]


class Provisioners(Answer):
    provisioners: list[Provisioner]


class ProvisionerDeleted(Answer):
    name: str
    deleted: bool
    nodes_to_remove: list[str]


class CatalogSource(Answer):
    id: str
    name: str
    kind: str
    location: str
    ref: str
    scope: str
    owner: str
    owner_id: str
    added_by: str
    added_at: Timestamp


class CatalogSources(Answer):
    sources: list[CatalogSource]


class CatalogSourceRemoved(Answer):
    id: str
    name: str
    removed: bool


class Catalog(Answer):
    templates: list[dict[str, Any]]  # name, source, title, description, category and the form's fields
    sources: list[dict[str, Any]]  # each source's name and whether it could be read


class Template(Answer):
    name: str


class Rendered(Answer):
    template: str
    fuzzfile: str
    warnings: list[Problem]


class TemplateStarted(Answer):
    id: str
    name: str
    template: str
    warnings: list[Problem]


class StoredObject(Answer):
    object: str
    name: str
    size: int
    sha256: str
    modified: str
    uploaded_by: str


class ObjectPut(StoredObject):
    result: str


class ObjectList(Answer):
    objects: list[StoredObject]
    next_page_token: str | None
    next: str | None = None  # the same place as `next_page_token`, as every list pages: pass back as `?next=`


class ObjectDeleted(Answer):
    object: str
    deleted: bool


class TokenRevoked(Answer):
    workflow: str
    revoked: bool
    already: bool


class Explained(Answer):
    allocation: dict[str, Any]
    stage: str
    why: Any


class FederationStatus(Answer):
    hub: str
    stream: str
    exists: bool
    messages: int
    members: list[dict[str, Any]]
    clusters: list[dict[str, Any]]


class FederationStats(Answer):
    clusters: Any


class FederatedWorkflows(Answer):
    clusters: list[dict[str, Any]]
    workflows: list[dict[str, Any]]


class CatalogSourceRefreshed(Answer):
    """A source read anew (a git source fetched now): its templates, the problems of those that could not be read,
    or `error`, why the source itself could not be (its last checkout, if any, still serves)."""

    id: str
    name: str
    scope: str
    owner: str
    templates: int
    error: str
    problems: list[Problem]
