"""Subject and stream names: `roving.<cluster>.<kind>.<aggregate-id>` on stream `ROVING_<CLUSTER>`."""

from __future__ import annotations

import re
from dataclasses import dataclass
from uuid import UUID

TRACKING_KIND = "_tracking"
SAFE_TOKEN = re.compile(r"[^A-Za-z0-9_\-:]")
CLUSTER_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,62}$")


def check_cluster_name(cluster: str) -> str:
    if not CLUSTER_NAME.match(cluster):
        raise ValueError(
            f"cluster name {cluster!r} is invalid: use lowercase letters, digits, '-' and '_' "
            "(at most 63, starting with a letter or digit)"
        )
    return cluster


def id_token(originator_id: UUID | str) -> str:
    """A subject token for an aggregate id; characters NATS reserves are percent-encoded."""
    text = str(originator_id)
    return SAFE_TOKEN.sub(lambda m: "%" + "%".join(f"{b:02X}" for b in m.group().encode()), text)


def kind_of(topic: str) -> str:
    """`domain.workflow:Workflow.Submitted` -> `workflow`; topics without a class path -> `event`."""
    _, sep, qualname = topic.partition(":")
    if not sep or "." not in qualname:
        return "event"
    return id_token(qualname.split(".", 1)[0].lower())


@dataclass(frozen=True)
class StreamNames:
    """The streams and subject prefixes one cluster uses."""

    cluster: str

    @property
    def events(self) -> str:
        return f"ROVING_{self.cluster.upper().replace('-', '_')}"

    @property
    def snapshots(self) -> str:
        return f"{self.events}_SNAPSHOTS"

    @property
    def tracking(self) -> str:
        return f"{self.events}_TRACKING"

    def prefix(self, purpose: str) -> str:
        return {"events": "roving", "snapshots": "roving_snapshots", "tracking": "roving_tracking"}[
            purpose
        ] + f".{self.cluster}"

    def stream(self, purpose: str) -> str:
        return {"events": self.events, "snapshots": self.snapshots, "tracking": self.tracking}[purpose]

    def subject(self, purpose: str, kind: str, originator_id: UUID | str) -> str:
        return f"{self.prefix(purpose)}.{kind}.{id_token(originator_id)}"

    def aggregate_filter(self, purpose: str, originator_id: UUID | str) -> str:
        """Every subject of one aggregate, whatever kind its topics gave it."""
        return f"{self.prefix(purpose)}.*.{id_token(originator_id)}"

    def tracking_subject(self, purpose: str, application_name: str) -> str:
        if purpose == "tracking":
            return f"{self.prefix(purpose)}.{id_token(application_name)}"
        return f"{self.prefix(purpose)}.{TRACKING_KIND}.{id_token(application_name)}"
