"""Who a federation holds: a member cluster (its stream, JetStream domain and control plane), how membership is
kept in the hub stream's metadata, and which member stream a sourced message came from."""

from __future__ import annotations

from dataclasses import dataclass

from nats.js.api import ExternalStream, StreamSource

from adapters.jetstream.subjects import StreamNames, check_cluster_name

MEMBER_KEY = "roving.member."
API_KEY = "roving.api."
DOMAIN_NAME_CHARS = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-")


@dataclass(frozen=True)
class Member:
    """One member cluster: its cluster id (stream `ROVING_<CLUSTER>`) and the JetStream domain it runs in."""

    cluster: str
    domain: str
    api_url: str | None = None  # its control plane, for answers that send a user there

    def __post_init__(self) -> None:
        check_cluster_name(self.cluster)
        if self.api_url is not None and not self.api_url.startswith(("http://", "https://")):
            raise ValueError(f"--api {self.cluster}={self.api_url}: expected an http:// or https:// URL")
        if not self.domain or not set(self.domain) <= DOMAIN_NAME_CHARS:
            raise ValueError(
                f"JetStream domain {self.domain!r} of cluster {self.cluster} is invalid: "
                "use letters, digits, '-' and '_' (the `domain` in the member's jetstream block)"
            )

    @classmethod
    def parse(cls, text: str) -> Member:
        """`CLUSTER=DOMAIN`, or just `CLUSTER` when the domain has the cluster's name."""
        cluster, sep, domain = text.partition("=")
        cluster, domain = cluster.strip(), domain.strip()
        if sep and not domain:
            raise ValueError(f"--member {text!r} has no domain: write CLUSTER=DOMAIN, e.g. c1=c1")
        return cls(cluster, domain if sep else cluster)

    @property
    def stream(self) -> str:
        return StreamNames(self.cluster).events

    @property
    def subjects(self) -> str:
        return StreamNames(self.cluster).prefix("events") + ".>"

    @property
    def api(self) -> str:
        return f"$JS.{self.domain}.API"

    def source(self) -> StreamSource:
        return StreamSource(name=self.stream, external=ExternalStream(api=self.api))


def origin_sequence(headers: dict[str, str] | None) -> tuple[str, int] | None:
    """The member stream and sequence of a sourced message, from `Nats-Stream-Source`.

    The server writes `<stream>[:<domain hash>] <seq> <filter> <transform> <subject> ...`.
    """
    value = (headers or {}).get("Nats-Stream-Source")
    if not value:
        return None
    parts = value.split()
    if len(parts) < 2 or not parts[1].isdigit():
        return None
    return parts[0].split(":", 1)[0], int(parts[1])


def members_from_metadata(metadata: dict[str, str] | None) -> list[Member]:
    found = metadata or {}
    return [
        Member(key[len(MEMBER_KEY):], domain, found.get(API_KEY + key[len(MEMBER_KEY):]) or None)
        for key, domain in sorted(found.items())
        if key.startswith(MEMBER_KEY)
    ]


def metadata_for(members: list[Member], before: dict[str, str] | None) -> dict[str, str]:
    """The stream's metadata with `members` as its membership (other keys kept as they were)."""
    kept = {k: v for k, v in (before or {}).items() if not k.startswith((MEMBER_KEY, API_KEY))}
    kept.update({MEMBER_KEY + m.cluster: m.domain for m in members})
    kept.update({API_KEY + m.cluster: m.api_url for m in members if m.api_url})
    return kept
