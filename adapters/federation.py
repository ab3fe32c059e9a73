"""Federation: one hub stream, `ROVING_FEDERATED`, that sources every member cluster's `ROVING_<CLUSTER>`.

Topology (see ops/nats/federation-*.conf): every member cluster runs its own nats-server (or JetStream
cluster) in its own JetStream domain and connects out as a leaf node to the hub, whose domain is `hub`.
Through the leaf connection the hub reaches each member's JetStream API as `$JS.<domain>.API`, so the
federated stream sources `ROVING_<CLUSTER>` with `external.api = "$JS.<domain>.API"`. Subjects keep
their `roving.<cluster>.<kind>.<id>` form, so every federated event still names its cluster, and the
server's `Nats-Stream-Source` header carries the member stream's own sequence. The hub's source
consumer resumes from the last sequence it stored, so a member that was down catches up in order, with
nothing lost or duplicated.

Membership is kept in the stream's metadata (`roving.member.<cluster>: <domain>`, and the member's
control-plane URL as `roving.api.<cluster>` when given), so `status()` needs only the hub URL.
`Federation.connect()` is the one place anything connects to the hub (the routes, the hub reader and
member log reads all go through it): connection options such as credentials belong there.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass, field
from typing import Any, TypeVar

import nats
import nats.errors
import nats.js.errors
from nats.aio.client import Client
from nats.js.api import StorageType, StreamConfig

from adapters.federation_members import Member, members_from_metadata, metadata_for, origin_sequence
from adapters.jetstream import headers

FEDERATED_STREAM = "ROVING_FEDERATED"
UNREACHABLE = (
    asyncio.TimeoutError,
    nats.errors.TimeoutError,
    nats.errors.NoRespondersError,
)
T = TypeVar("T")


async def _quiet(error: Exception) -> None:
    """nats-py reports connect failures here as well as raising them; the raise is enough."""


class FederationError(RuntimeError):
    """The hub could not be reached or refused the federated stream; the message names the fix."""


@dataclass
class MemberStatus:
    """What the hub knows of one member. `available` is False whenever the member cannot be asked."""

    cluster: str
    domain: str
    stream: str
    reachable: bool
    sourcing: bool
    lag: int | None
    active_seconds: float | None
    last_seen_seq: int
    member_last_seq: int | None
    error: str | None = None
    api_url: str | None = None

    @property
    def available(self) -> bool:
        return self.reachable and self.error is None

    @property
    def state(self) -> str:
        """`unavailable`, `catching-up` (reachable, the hub holds less than the member) or `in-sync`."""
        if not self.available:
            return "unavailable"
        if self.member_last_seq is not None and self.last_seen_seq < self.member_last_seq:
            return "catching-up"
        return "in-sync"

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "available": self.available, "state": self.state}


@dataclass
class FederationStatus:
    hub: str
    stream: str
    exists: bool
    messages: int
    members: list[MemberStatus] = field(default_factory=list)
    last_seq: int = 0

    def member(self, cluster: str) -> MemberStatus:
        for status in self.members:
            if status.cluster == cluster:
                return status
        raise KeyError(cluster)

    def to_dict(self) -> dict[str, Any]:
        return {
            "hub": self.hub, "stream": self.stream, "exists": self.exists, "messages": self.messages,
            "last_seq": self.last_seq, "members": [m.to_dict() for m in self.members],
        }


class Federation:
    """Creates and inspects the hub's federated stream. Sync methods run their own event loop;
    the `a`-prefixed ones are for callers already inside one."""

    def __init__(
        self, hub_url: str, members: list[Member] | None = None, stream: str = FEDERATED_STREAM,
        timeout: float = 2.0, replicas: int = 1,
    ) -> None:
        self.hub_url = hub_url
        self.members = list(members or [])
        clusters = [m.cluster for m in self.members]
        duplicates = sorted({c for c in clusters if clusters.count(c) > 1})
        if duplicates:
            raise ValueError(f"cluster {', '.join(duplicates)} is named twice: give each --member once")
        self.stream = stream
        self.timeout = timeout
        self.replicas = replicas

    # -- sync facade ---------------------------------------------------------------------------------
    def ensure(self) -> list[Member]:
        return asyncio.run(self._with_hub(self.aensure))

    def status(self) -> FederationStatus:
        return asyncio.run(self._with_hub(self.astatus))

    # -- async ---------------------------------------------------------------------------------------
    async def _with_hub(self, work: Callable[[Client], Awaitable[T]]) -> T:
        nc = await self.connect()
        try:
            return await work(nc)
        finally:
            await nc.close()

    async def connect(self) -> Client:
        try:
            return headers.install(await asyncio.wait_for(nats.connect(
                servers=[u.strip() for u in self.hub_url.split(",") if u.strip()],
                name="roving-federation", connect_timeout=self.timeout, allow_reconnect=False,
                max_reconnect_attempts=0, error_cb=_quiet,
            ), timeout=self.timeout * 2))
        except Exception as error:  # noqa: BLE001 - every connect failure has the same fix
            raise FederationError(
                f"cannot reach the hub at {self.hub_url} ({error.__class__.__name__}): "
                "start the hub nats-server (ops/nats/federation-hub.conf) or fix --hub"
            ) from error

    async def _config(self, nc: Client) -> StreamConfig | None:
        try:
            info = await nc.jetstream(timeout=self.timeout).stream_info(self.stream)
        except nats.js.errors.NotFoundError:
            return None
        except nats.errors.NoRespondersError as error:
            raise FederationError(
                f"the hub at {self.hub_url} has no JetStream: enable it (jetstream {{ domain: hub }})"
            ) from error
        return info.config

    async def aensure(self, nc: Client) -> list[Member]:
        """Create the federated stream, or add/replace members in it; returns every member it sources."""
        if not self.members:
            raise ValueError("no members: give at least one --member CLUSTER=DOMAIN")
        js = nc.jetstream(timeout=self.timeout)
        config = await self._config(nc)
        known = {m.cluster: m for m in members_from_metadata(config.metadata if config else None)}
        for m in self.members:  # a member named again keeps the URL it was given before, unless given a new one
            old = known.get(m.cluster)
            known[m.cluster] = m if m.api_url or old is None else Member(m.cluster, m.domain, old.api_url)
        members = [known[c] for c in sorted(known)]
        metadata = metadata_for(members, config.metadata if config else None)
        sources = [m.source() for m in members]
        if config is None:
            await js.add_stream(StreamConfig(
                name=self.stream, description="Every member cluster's events (roving federate)",
                sources=sources, storage=StorageType.FILE, num_replicas=self.replicas,
                allow_direct=True, metadata=metadata,
            ))
        else:
            config.sources, config.metadata = sources, metadata
            config.num_replicas = max(config.num_replicas or 1, self.replicas)  # up only, as adapters.jetstream.replicas
            await js.update_stream(config)
        return members

    async def astatus(self, nc: Client) -> FederationStatus:
        js = nc.jetstream(timeout=self.timeout)
        try:
            info = await js.stream_info(self.stream)
        except nats.js.errors.NotFoundError:
            members = self.members
            return FederationStatus(self.hub_url, self.stream, False, 0, [
                await self._member_status(nc, m, None) for m in members
            ])
        recorded = {m.cluster: m for m in members_from_metadata(info.config.metadata)}
        members = [Member(m.cluster, m.domain, m.api_url or getattr(recorded.get(m.cluster), "api_url", None))
                   for m in self.members] or list(recorded.values())
        sources = {s.name: s for s in (info.sources or [])}
        statuses = await asyncio.gather(*(self._member_status(nc, m, sources.get(m.stream)) for m in members))
        return FederationStatus(self.hub_url, self.stream, True, info.state.messages, list(statuses),
                                last_seq=info.state.last_seq)

    async def _member_status(self, nc: Client, member: Member, source: Any) -> MemberStatus:
        reachable, member_last, error = False, None, None
        try:
            reply = await nc.request(f"{member.api}.STREAM.INFO.{member.stream}", b"", timeout=self.timeout)
            answer = json.loads(reply.data or b"{}")
            if "error" in answer:
                reachable = True
                error = (f"{member.stream} answered {answer['error'].get('description', 'an error')} in domain "
                         f"{member.domain}: run the cluster's control plane once so it creates its stream")
            else:
                reachable, member_last = True, int(answer["state"]["last_seq"])
        except UNREACHABLE:
            error = (f"domain {member.domain} does not answer: its nats-server is down or not connected "
                     "to the hub as a leaf node")
        if source is not None and source.error is not None and error is None:
            error = f"hub cannot source {member.stream}: {source.error}"
        active = None
        if source is not None and source.active is not None and source.active >= 0:
            active = source.active / 1e9
        return MemberStatus(
            cluster=member.cluster, domain=member.domain, stream=member.stream, reachable=reachable,
            sourcing=source is not None, lag=source.lag if source is not None else None,
            active_seconds=active, last_seen_seq=await self._last_seen(nc, member),
            member_last_seq=member_last, error=error, api_url=member.api_url,
        )

    async def _last_seen(self, nc: Client, member: Member) -> int:
        """The member-stream sequence of the newest event of this cluster the hub holds (0: none yet)."""
        request = json.dumps({"last_by_subj": member.subjects}).encode()
        try:
            msg = await nc.request(f"$JS.API.DIRECT.GET.{self.stream}", request, timeout=self.timeout)
        except UNREACHABLE:
            return 0
        if (msg.headers or {}).get("Status"):
            return 0
        origin = origin_sequence(msg.headers)
        return origin[1] if origin else 0
