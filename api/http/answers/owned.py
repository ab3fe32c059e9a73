"""Answers about what people keep by name: persistent endpoints (binding, targets and takeover; the list; a deletion)
and secrets (a created secret's id; a secret's name and scope, never its value)."""


from api.http.answers.base import Answer, Timestamp


class Endpoint(Answer):
    """A persistent endpoint; a create answered before the views caught up names only its id and name."""

    id: str
    name: str
    owner_kind: str = ""
    owner_id: str = ""
    scope: str = ""
    path: str = ""
    url: str = ""
    status: str = ""
    workflow_id: str | None = None
    service: str | None = None
    target: str | None = None
    targets: list[str] = []
    pending_workflow_id: str | None = None
    reason: str | None = None
    last_failure: str | None = None


class EndpointList(Answer):
    endpoints: list[Endpoint]


class Deleted(Answer):
    id: str
    deleted: bool


class SecretCreated(Answer):
    id: str


class Secret(Answer):
    """A secret's name and scope, never its value."""

    id: str
    name: str
    scope: str
    group: str
    reference: str
    created_by: str
    created_at: Timestamp


class Secrets(Answer):
    secrets: list[Secret]
