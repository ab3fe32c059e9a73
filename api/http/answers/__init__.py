"""The shapes of the API's answers: msgspec types that routes encode (or whose shape their answers are tested
against, tests/unit/api/test_openapi_answers.py) and that /v4/openapi.json describes as response schemas.

`@answers(Type)` on a route names its success answer; the OpenAPI document reads it from there. The types live by
subject (base, work, nodes, tenancy, owned; `more` for the routes typed by operation); every name is importable
from here, as routes do.
"""

from api.http.answers.base import Answer, Error, Health, Problem, Readiness, Version, answers
from api.http.answers.more import (
    AuditResult,
    AuditRows,
    Catalog,
    CatalogSource,
    CatalogSourceRefreshed,
    CatalogSourceRemoved,
    CatalogSources,
    CentralConfig,
    ConfigChanged,
    Explained,
    FederatedWorkflows,
    FederationStats,
    FederationStatus,
    GroupProjectSet,
    KeyRotated,
    ObjectDeleted,
    ObjectList,
    ObjectPut,
    Ok,
    Preset,
    Presets,
    Profile,
    ProfileDeleted,
    Profiles,
    Project,
    Projects,
    ProvisionedNode,
    Provisioner,
    ProvisionerDeleted,
    Provisioners,
    Rendered,
    SharedResources,
    StorageVolume,
    StoredObject,
    Template,
    TemplateStarted,
    TokenRevoked,
    VolumeProvisioner,
    VolumeProvisionerDeleted,
    VolumeProvisioners,
)
from api.http.answers.nodes import (
    Credential,
    CredentialRevoked,
    Credentials,
    Evicted,
    Hold,
    HoldCreated,
    Holds,
    Node,
    NodeEvent,
    NodeEvents,
    NodeList,
    Outcomes,
    Readmitted,
    Released,
    Removed,
    Resources,
    TargetGroup,
)
from api.http.answers.owned import Deleted, Endpoint, EndpointList, Secret, SecretCreated, Secrets
from api.http.answers.tenancy import (
    Changed,
    Created,
    Group,
    Groups,
    Membership,
    Organization,
    Organizations,
    PosixId,
    PreemptList,
    PriorityChanged,
    Revoked,
    TokenPair,
    Unlocked,
    User,
    Users,
    Whoami,
)
from api.http.answers.work import (
    ActivityEvent,
    Owner,
    QueuePage,
    QueueStats,
    Stage,
    Stopped,
    Validation,
    WhyAnswer,
    WhyStage,
    WorkflowCreated,
    WorkflowDefinition,
    WorkflowDetail,
    WorkflowEvents,
    WorkflowList,
    WorkflowRetried,
    WorkflowSummary,
)

__all__ = [
    "ActivityEvent", "Answer", "Changed", "Created", "Credential", "CredentialRevoked", "Credentials", "Deleted",
    "Endpoint", "EndpointList", "Error", "Evicted", "Group", "Groups", "Health", "Hold", "HoldCreated", "Holds", "Membership",
    "Node", "NodeEvent", "NodeEvents", "NodeList", "Organization", "Organizations", "Outcomes", "Owner", "PosixId",
    "PreemptList", "PriorityChanged", "Problem", "QueuePage", "QueueStats", "Readiness", "Readmitted", "Released",
    "Removed", "Resources", "Revoked", "Secret", "SecretCreated", "Secrets", "Stage", "Stopped", "TargetGroup",
    "TokenPair", "Unlocked", "User", "Users", "Validation", "Version", "Whoami", "WhyAnswer", "WhyStage",
    "WorkflowCreated", "WorkflowDetail", "WorkflowEvents", "WorkflowList", "WorkflowSummary", "answers",
    "AuditResult", "AuditRows", "Catalog", "CatalogSource", "CatalogSourceRemoved", "CatalogSources", "Explained",
    "FederatedWorkflows", "FederationStats", "FederationStatus", "GroupProjectSet", "KeyRotated", "ObjectDeleted",
    "ObjectList", "ObjectPut", "Ok", "Preset", "Presets", "Profile", "ProfileDeleted", "Profiles", "Project",
    "Projects", "Provisioner", "ProvisionerDeleted", "Provisioners", "Rendered", "SharedResources", "StoredObject",
    "Template", "TemplateStarted", "TokenRevoked", "WorkflowDefinition", "WorkflowRetried",
    "CatalogSourceRefreshed", "CentralConfig", "ConfigChanged", "ProvisionedNode", "StorageVolume",
    "VolumeProvisioner", "VolumeProvisionerDeleted", "VolumeProvisioners",
]

# The OpenAPI document names a schema whose class name is taken twice (a request body's, too) by module and class:
# each answer type keeps the public module's name, so the document and its $refs stay what clients know. (So the
# submodules evaluate their annotations at definition: msgspec would look strings up in this module.)
for _kind in Answer.__subclasses__():
    _kind.__module__ = __name__
