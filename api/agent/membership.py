"""The node's membership of the cluster, as its agent keeps it: registration (or resuming its predecessor's), the
lease it heartbeats at its epoch, and the credential it speaks with (the node's own, back to the bootstrap token
when that one is refused). A part of the Agent (api/agent/agent.py), apart from the work it runs."""

from __future__ import annotations

import asyncio
from abc import abstractmethod
from pathlib import Path
from typing import Any
from uuid import UUID

import httpx
import structlog

from adapters.adoption import Registration, registration_digest
from api.agent.args import AgentConfig
from api.agent.messages import as_json, beat_of, registered
from api.agent.poll import AssignmentFeed
from domain.agent_protocol import Heartbeat, Register

log = structlog.get_logger("roving.agent")


class Membership:
    """Registration, lease and the API calls; the Agent gives it the HTTP client, the slots and what stops its work."""

    config: AgentConfig
    http: httpx.AsyncClient
    registration: Registration
    feed: AssignmentFeed
    bus: Any  # api/agent/bus.AgentBus: told the node's key at each epoch
    slots: dict[str, Any]
    log: Any

    def __init__(self, config: AgentConfig) -> None:
        self.node_id: str | None = None
        self.epoch = 0
        self.registration = Registration(Path(config.workdir) / ".roving-agent" / "node.json")

    async def call(self, method: str, path: str, **kwargs: Any) -> httpx.Response | None:
        """One API call; None when the API cannot be reached (the loop simply tries again)."""
        try:
            return await self.http.request(method, path, **kwargs)
        except httpx.HTTPError as error:
            self.log.warning("agent.api_unreachable", path=path, error=repr(error))
            return None

    @abstractmethod
    async def stop_all(self, reason: str, report: bool) -> None:
        """Cancel the work running here (the Agent's: a stale epoch stops it before the node registers anew)."""

    async def resume(self, stop: asyncio.Event, adopted: bool) -> bool:
        """Carry on under the predecessor's registration when the control plane still holds it (a heartbeat
        with its epoch is accepted); registering anew would give up every allocation placed here, those of jobs
        it adopted and those placed while it was away (a restarted control plane places on a node it still
        holds). With no job to keep, it resumes only a registration of the node as it is now (capacity,
        devices, labels, addresses); a changed node registers anew, so the control plane learns the change."""
        if (saved := self.registration.load()) is None:
            return False
        node_id, epoch, registered_as = saved
        if not adopted and registered_as != registration_digest(self.registration_body()):
            return False
        self.node_id, self.epoch = node_id, epoch
        while not stop.is_set():
            response = await self.call("POST", "/v4/agent/heartbeat", **as_json(self.heartbeat_body()))
            if response is not None and response.status_code == 200:
                self.bus.keyed(self.epoch, beat_of(response).bus_key)
                self.log = log.bind(node=self.config.node, node_id=self.node_id, node_epoch=self.epoch)
                self.log.info("agent.resumed", allocations=sorted(self.slots))
                return True
            if response is not None and response.status_code < 500 and response.status_code != 429:
                self.log.warning("agent.resume_refused", status=response.status_code, body=response.text[:200])
                return False
            await sleep_or_stop(stop, self.config.heartbeat)
        return False

    def registration_body(self) -> Register:
        c = self.config
        return Register(name=c.node, cpu=c.cpus, memory=c.memory, devices=c.devices, annotations=c.annotations,
                        definition=c.definition or "", address=c.address, metrics_port=c.metrics_port,
                        segment=c.segment or "")

    def heartbeat_body(self) -> Heartbeat:
        return Heartbeat(node_id=UUID(self.node_id or ""), epoch=self.epoch, running=sorted(self.slots))

    async def register(self, stop: asyncio.Event) -> None:
        c, body = self.config, self.registration_body()
        while not stop.is_set():
            response = await self.call("POST", "/v4/agent/register", **as_json(body))
            if self.own_token_refused(response):
                continue
            answer = registered(response)
            if answer is not None:
                self.node_id, self.epoch = str(answer.node_id), answer.epoch
                self.bus.keyed(answer.epoch, answer.bus_key)
                if answer.token:  # the node's own credential, revocable by admins, from now on
                    self.http.headers["Authorization"] = f"Bearer {answer.token}"
                self.registration.save(self.node_id, self.epoch, registration_digest(body))
                self.feed.forget()
                self.log = log.bind(node=c.node, node_id=self.node_id, node_epoch=self.epoch)
                self.log.info("agent.registered")
                return
            if response is not None and response.status_code != 200:
                self.log.warning("agent.register_refused", status=response.status_code, body=response.text[:200])
            await sleep_or_stop(stop, c.heartbeat)

    def own_token_refused(self, response: httpx.Response | None) -> bool:
        """A 401 for the node's own token (expired, or revoked by an admin): back to the bootstrap token, so an
        expired one never strands the node; the control plane refuses a fenced node that token too."""
        bootstrap = f"Bearer {self.config.token}"
        if response is None or response.status_code != 401 or self.http.headers.get("Authorization") == bootstrap:
            return False
        self.log.warning("agent.own_token_refused", reason=response.text[:200])
        self.http.headers["Authorization"] = bootstrap
        return True

    async def keep_lease(self, stop: asyncio.Event) -> None:
        """Heartbeat until stopped: a failed beat is logged and the next one tried (this task ending would let the
        node's lease lapse while its jobs run)."""
        while not stop.is_set():
            try:
                await self.heartbeat(stop)
            except Exception:  # noqa: BLE001 - see above
                self.log.exception("agent.heartbeat_failed")
            await sleep_or_stop(stop, self.config.heartbeat)

    async def heartbeat(self, stop: asyncio.Event) -> None:
        response = await self.call("POST", "/v4/agent/heartbeat", **as_json(self.heartbeat_body()))
        self.own_token_refused(response)
        if response is not None and response.status_code == 200:
            self.bus.keyed(self.epoch, beat_of(response).bus_key)
        if response is not None and response.status_code == 409:
            self.log.warning("agent.stale_epoch", reason=response.text[:200])
            await self.stop_all(f"node epoch {self.epoch} is stale", report=False)
            await self.register(stop)


async def sleep_or_stop(stop: asyncio.Event, seconds: float) -> None:
    try:
        await asyncio.wait_for(stop.wait(), seconds)
    except TimeoutError:
        pass
