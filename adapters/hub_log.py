"""The hub's federated stream as a log the follower reads, decoded into what the FederatedView applies.

`HubLog` pages ROVING_FEDERATED by direct gets from a connection already open (the federation routes
hold one per request). `Arrivals` turns each message into an `Arrived`: its member subject
`roving.<cluster>.<kind>.<id>` names its cluster, `Roving-Topic` and `Roving-Version` its event, and
`Nats-Stream-Source` its sequence in the member's own stream; Workflow and Allocation events are decoded
from their MessagePack state. `catch_up_from_hub` feeds a view with the one follower (adapters.follower).
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Sequence
from urllib.parse import unquote
from uuid import UUID

from eventsourcing.persistence import Mapper, StoredEvent
from nats.aio.client import Client

from adapters.federation import FEDERATED_STREAM, Federation, FederationStatus
from adapters.federation_members import origin_sequence
from adapters.follower import Follower
from adapters.jetstream.client import RawMsg
from adapters.jetstream.subjects import TRACKING_KIND
from adapters.logs import Logs
from adapters.transcoder import MsgspecTranscoder
from projections.federated import Arrived, FederatedEvent, FederatedView

PAGE = 500  # messages per direct-get request


class HubLog:
    """ROVING_FEDERATED, read like eventsourcing's `select_notifications`: a short page is its end for now."""

    def __init__(self, nc: Client, stream: str = FEDERATED_STREAM, timeout: float = 5.0) -> None:
        self.nc, self.stream, self.timeout = nc, stream, timeout

    async def aselect_notifications(self, start: int, limit: int) -> list[RawMsg]:
        found: list[RawMsg] = []
        while len(found) < limit:
            page = await self._direct_batch(start, min(PAGE, limit - len(found)))
            if not page:
                break
            found.extend(page)
            start = page[-1].seq + 1
        return found

    async def _direct_batch(self, start: int, batch: int) -> list[RawMsg]:
        """One batched direct get: the messages from `start` until the server's end-of-batch status."""
        inbox = self.nc.new_inbox()
        sub = await self.nc.subscribe(inbox)
        try:
            request = {"seq": start, "next_by_subj": ">", "batch": batch}
            await self.nc.publish(f"$JS.API.DIRECT.GET.{self.stream}", json.dumps(request).encode(), reply=inbox)
            found: list[RawMsg] = []
            while True:
                msg = await sub.next_msg(timeout=self.timeout)
                headers = msg.headers or {}
                if headers.get("Status"):
                    return found
                found.append(RawMsg(int(headers["Nats-Sequence"]), headers["Nats-Subject"], headers, msg.data))
        finally:
            await sub.unsubscribe()


class Arrivals:
    """Federated messages -> (sequence, Arrived), or (sequence, None) for a message that is no event."""

    def __init__(self) -> None:
        self._mapper: Mapper[UUID] = Mapper(transcoder=MsgspecTranscoder())

    def __call__(self, messages: Sequence[RawMsg]) -> list[tuple[int, Arrived | None]]:
        return [(m.seq, self.arrived(m)) for m in messages]

    def arrived(self, msg: RawMsg) -> Arrived | None:
        parts, headers = msg.subject.split(".", 3), msg.headers
        if len(parts) < 4 or parts[0] != "roving" or parts[2] == TRACKING_KIND or "Roving-Topic" not in headers:
            return None
        origin = origin_sequence(headers)
        event = FederatedEvent(parts[1], msg.seq, origin[1] if origin else None, unquote(parts[3]), parts[2],
                               headers["Roving-Topic"], int(headers.get("Roving-Version", 0)))
        return Arrived(event, self._decoded(event, msg))

    def _decoded(self, event: FederatedEvent, msg: RawMsg) -> object | None:
        try:
            originator = event.aggregate_id if msg.headers.get("Roving-Id-Type") == "str" else UUID(event.aggregate_id)
            return self._mapper.to_domain_event(StoredEvent(originator_id=originator, originator_version=event.version,
                                                            topic=event.topic, state=msg.data))
        except Exception:  # noqa: BLE001 - an event this build cannot decode still counts, it is not mirrored
            return None


async def catch_up_from_hub(nc: Client, view: FederatedView, stream: str = FEDERATED_STREAM,
                            timeout: float = 5.0) -> None:
    """Feed `view` every message of the federated stream past its position."""
    await Follower(HubLog(nc, stream, timeout), view, Arrivals(), name="federation", page=PAGE).acatch_up()


def read_federated_view(hub_url: str, status: FederationStatus | None = None,
                        stream: str = FEDERATED_STREAM) -> FederatedView:
    """A FederatedView of everything the hub holds (blocking: it runs its own event loop)."""
    async def read() -> FederatedView:
        view = FederatedView()
        nc = await Federation(hub_url, stream=stream, timeout=5.0).connect()
        try:
            await catch_up_from_hub(nc, view, stream)
        finally:
            await nc.close()
        return view
    view = asyncio.run(read())
    view.status = status
    return view


class HubReader:
    """One hub's FederatedView, kept for the life of a process; `refresh()` adds what arrived since the last one.

    Blocking (it runs its own event loop): call it from a worker thread. Refreshes take turns; a reader of the
    view meanwhile takes `view.lock` and sees each batch wholly applied or not at all. A federated stream that
    was recreated (it ends before the view's position) starts a fresh view.
    """

    def __init__(self, hub_url: str, timeout: float = 2.0, stream: str = FEDERATED_STREAM) -> None:
        self.hub_url, self.timeout, self.stream = hub_url, timeout, stream
        self.view = FederatedView()
        self._turn = threading.Lock()

    def refresh(self) -> FederatedView:
        with self._turn:
            return asyncio.run(self._refresh())

    async def _refresh(self) -> FederatedView:
        federation = Federation(self.hub_url, stream=self.stream, timeout=self.timeout)
        nc = await federation.connect()
        try:
            status = await federation.astatus(nc)
            if not status.exists or status.last_seq < self.view.position:
                self.view = FederatedView()
            if status.exists:
                await catch_up_from_hub(nc, self.view, self.stream, timeout=max(self.timeout, 5.0))
            self.view.status = status
            return self.view
        finally:
            await nc.close()


def read_member_log(hub_url: str, domain: str, cluster: str, workflow_id: str, stage: str,
                    timeout: float = 10.0) -> bytes:
    """A stage's log from a member cluster's own `LOGS_<CLUSTER>` stream, reached through the hub's leaf
    connection in the member's JetStream domain (logs are not federated: they stay where the job ran).
    Blocking; raises FederationError when the hub cannot be reached, TimeoutError when the member does not answer."""
    async def read() -> bytes:
        nc = await Federation(hub_url, timeout=timeout).connect()
        try:
            logs = Logs(nc.jetstream(domain=domain, timeout=timeout), cluster)
            return await asyncio.wait_for(logs.read(workflow_id, stage), timeout)
        finally:
            await nc.close()
    return asyncio.run(read())
