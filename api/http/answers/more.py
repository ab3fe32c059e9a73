"""Answers of the routes that name no `@answers` themselves (admin, catalog, objects, federation, projects,
profiles, provisioners, agents): the OpenAPI document types them from here, by operation (api.http.routes.openapi).

Where a part of an answer is a document the API passes through (a profile's resource, a provisioner's template, a
catalog template, a federated cluster's rows), it is an object of any keys; the answer around it is typed."""

from typing import Any

import msgspec

from api.http.answers.base import Answer, Problem, Timestamp
from projections.audit import AuditRow
from projections.projects import SharedRow
from projections.queue_rows import QueueRow


class Ok(Answer):
    ok: bool


class AuditRows(Answer):
    rows: list[AuditRow]
    next: str | None = None  # pass back as `?next=` for the following page; None: this was the last


class AuditResult(Answer):
    columns: list[str]
    rows: list[list[Any]]
    truncated: bool


class KeyRotated(Answer):
    key_id: str
    resealed: int


class CentralConfig(Answer):
    revision: int
    settings: dict[str, Any]  # the keys set, as they were set
    defaults: dict[str, Any]  # every key left unset, with the value it takes


class ConfigChanged(Answer):
    """The configuration as `CentralConfig` shows it after the change, and what the change was warned of."""

    revision: int
    settings: dict[str, Any]
    defaults: dict[str, Any]
    warnings: list[str]


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
    shared_resources: list[SharedRow]


class Preset(Answer, omit_defaults=True, kw_only=True):
    """A preset's YAML document (its description only when it has one), then its name and digest."""

    description: str = ""
    options: dict[str, Any]
    name: str
    digest: str


class Presets(Answer, omit_defaults=True):
    presets: list[Preset]
    broken: dict[str, str] = {}  # cluster admins only, when there are: a file in the presets folder that is no preset


class ProvisionedNode(Answer, rename="camel"):
    """A node a provisioner asked for, named as `request` and `node` (the same: the node's name)."""

    request: str
    node: str
    state: str
    requested_at: Timestamp
    attempts: int
    instance: str
    last_error: str
    retry_at: Timestamp | None
    up_at: Timestamp | None
    ended_at: Timestamp | None
    reason: str  # why it ended
    for_: str = msgspec.field(name="for")  # what it was asked for (an allocation id)


class Provisioner(Answer, rename="camel", omit_defaults=True):
    """A provisioner's definition (field names as PUT takes them, its node template a document) and its nodes."""

    name: str
    provider: str
    template: dict[str, Any]
    max_nodes: int
    idle_seconds: float
    expected_boot_seconds: float | None
    boot_timeout_seconds: float | None
    deleted: bool
    changed_by: str
    changed_at: Timestamp
    provision_seconds: float | None  # None until one of its nodes came up
    nodes: list[ProvisionedNode]
    settings: dict[str, Any] | None = None  # cluster admins only
    history: list[ProvisionedNode] | None = None  # one provisioner's answer: every node it asked for, newest first


class Provisioners(Answer):
    provisioners: list[Provisioner]


class ProvisionerDeleted(Answer):
    name: str
    deleted: bool
    nodes_to_remove: list[str]


class StorageVolume(Answer, rename="camel"):
    request: str
    reference: str
    organization: str
    uid: int
    gid: int
    state: str
    path: str
    reason: str
    attempts: int
    requested_at: Timestamp
    ended_at: Timestamp | None
    waiting: int  # workflows held until it is ready


class VolumeProvisioner(Answer, rename="camel"):
    """A volume provisioner's definition (field names as PUT takes them) and its volumes: how many in each state, or
    (one provisioner's answer) each one."""

    name: str
    storage_class: str = msgspec.field(name="class")
    program: str
    root: str
    timeout_seconds: float
    changed_by: str
    changed_at: Timestamp | None
    volumes: dict[str, int] | list[StorageVolume]


class VolumeProvisioners(Answer):
    provisioners: list[VolumeProvisioner]


class VolumeProvisionerDeleted(Answer):
    name: str
    deleted: bool
    failed: list[str]  # the requests of its volumes that failed with it


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


class ObjectPut(Answer):
    """A stored object's answer, with `result` (created, replaced, unchanged) after its name."""

    object: str
    result: str
    name: str
    size: int
    sha256: str
    modified: str
    uploaded_by: str


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
    allocation: QueueRow
    stage: str
    why: Any  # the stage's WhyStage; for an allocation no stage of the workflow names now, the scheduler's own reason


class FederationStatus(Answer):
    hub: str
    stream: str
    exists: bool
    messages: int
    members: list[dict[str, Any]]
    clusters: list[dict[str, Any]]


class FederationStats(Answer):
    clusters: list[dict[str, Any]]


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
