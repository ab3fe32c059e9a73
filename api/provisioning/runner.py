"""The provisioners' runner: each provisioner whose lease this control plane holds is looked after by its provider.

One thread ticks every second, and at once when the log brings provisioner or node news. For each provisioner it
holds (adapters.leases.NamedLease: two control planes never both act), it adopts what is recorded as made when it
takes the lease, asks the provider what vanished, and runs the steps domain.provisioner_lifecycle decides. What a
step starts is recorded before the provider acts (CreateStarted, DeleteStarted) and what it ends after (Created,
NodeDeleted), so a control plane that restarts or takes over resumes it. A slow provider (`command`) runs each call
on a thread of its own; the request is busy until it returns.
"""

from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import structlog
from eventsourcing.persistence import OperationalError

from adapters.background import Background
from adapters.leases import NamedLease
from adapters.provisioners import AgentLaunch, Order, Provider, ProviderError, order_for, provider_for
from api.provisioning import metrics
from domain.app.errors import AppError
from domain.provisioner import Provisioner, Request, State
from domain.provisioner_lifecycle import Do, NodeFacts, Step, next_steps
from domain.tenancy import Role, Source
from domain.tenancy.permissions import Principal
from projections.base import kind_of
from projections.provisioners import node_facts

log = structlog.get_logger("roving.provisioner")
INTERVAL = 1.0
MADE = frozenset({State.CREATED, State.UP, State.DRAINING})
ADOPTED = frozenset({State.CREATED, State.UP})  # a draining node's agent is not started again: it is on its way out
PRINCIPAL = Principal(user_id=None, username="provisioner", role=Role.USER, organization_id=None,
                      source=Source.PROVISIONER)
DELETE_RETRY_FIRST, DELETE_RETRY_LONGEST = 5.0, 120.0
RENEW_AFTER = 0.25   # of the lease TTL, as the scheduler's leader lease
LEAST_GAP = 0.2      # seconds between two looks however fast the log's news come


def utcnow() -> datetime:
    return datetime.now(UTC)


class ProvisionerRunner:
    def __init__(self, roving: Any, views: Any, leases: Any, launch: AgentLaunch, holder: str | None = None,
                 signals: Any = None, interval: float = INTERVAL, preexec: Any = None,
                 clock: Callable[[], datetime] | None = None, ready: Callable[[], bool] | None = None) -> None:
        self.roving, self.views, self.leases, self.launch = roving, views, leases, launch
        self.clock = clock or utcnow
        self.ready = ready or (lambda: True)  # the views caught up with the log: a restored snapshot is old news
        self.holder = holder or f"{socket.gethostname()}:{os.getpid()}"
        self.interval, self.preexec = interval, preexec
        self.providers: dict[str, Provider] = {}
        self.held: dict[str, NamedLease] = {}
        self.renewed: dict[str, float] = {}  # monotonic time of each lease's last renewal
        self.leading: set[str] = set()
        self.busy: set[str] = set()
        self.paused: dict[str, tuple[float, float]] = {}  # request -> (monotonic time to try again, pause)
        self.lock = threading.Lock()
        self.background = Background(self._run, "roving-provisioners", join_seconds=30)
        self.wake, self.stopping = self.background.wake, self.background.stopping
        if signals is not None:
            signals.listen(self.observe)

    def start(self) -> ProvisionerRunner:
        self.background.start()
        return self

    def stop(self) -> None:
        """The local provider's agents die with this thread (their death signal), as the local pool's do."""
        self.background.stop()

    def observe(self, batch: Any) -> None:
        if any(kind_of(e).startswith(("Provisioner.", "Node.")) for _, e in batch):
            self.wake.set()

    def _run(self) -> None:
        while not self.stopping.is_set():
            self.wake.wait(self.interval)
            if self.stopping.wait(LEAST_GAP):  # a burst of batches is one look
                break
            self.wake.clear()
            try:
                self.tick()
            except OperationalError as error:
                log.warning("provisioner.log_unavailable", error=str(error))
            except Exception:  # noqa: BLE001 - the runner must outlive one bad look; the next tick tries again
                log.exception("provisioner.tick_failed")
        for provider in self.providers.values():
            stop = getattr(provider, "stop", None)
            if stop is not None:
                stop()

    def tick(self, now: datetime | None = None) -> None:
        if not self.ready():
            return
        for p in self.views.provisioners.all(include_deleted=True):
            if p.deleted and not p.requests:
                self.leading.discard(p.name)
                continue
            if not self._hold(p.name):
                self.leading.discard(p.name)
                continue
            provider = self._provider(p)
            if p.name not in self.leading:
                self.leading.add(p.name)
                self._adopt(p, provider)
            self._reconcile(p, provider, now or self.clock())
            self._sweep(p, provider)

    def _hold(self, name: str) -> bool:
        """Hold the provisioner's lease, renewed once RENEW_AFTER of its TTL has passed (timed from before the
        renewal, so the lease outlives the belief), not on every tick the log's news bring."""
        if self.leases is None:
            return True
        asked = time.monotonic()
        if name in self.leading and asked - self.renewed.get(name, float("-inf")) < self.leases.ttl * RENEW_AFTER:
            return True
        lease = self.held.get(name) or self.held.setdefault(name, NamedLease(self.leases, f"provisioner.{name}"))
        holding = lease.hold(self.holder)
        self.renewed[name] = asked if holding else float("-inf")
        return holding

    def _provider(self, p: Provisioner) -> Provider:
        """One provider per provisioner, kept (the local one holds its agents' processes); settings follow changes."""
        found = self.providers.get(p.name)
        if found is None or getattr(found, "kind", "") != p.spec.provider:
            found = provider_for(p.spec.provider, p.spec.settings, self.launch, self.preexec)
            found.kind = p.spec.provider  # type: ignore[attr-defined]  # the runner's note, read back above
            self.providers[p.name] = found
        found.settings = dict(p.spec.settings)  # type: ignore[attr-defined]  # each provider keeps them; Provider omits it
        return found

    def _adopt(self, p: Provisioner, provider: Provider) -> None:
        """Taking the lease: what the log says was made is this provider's to keep (or start again)."""
        for r in p.live():
            if r.state in ADOPTED and self._current(p, r):
                try:
                    provider.adopt(order_for(p, r))
                except ProviderError as error:
                    log.warning("provisioner.adopt_failed", provisioner=p.name, request=r.id, error=str(error))

    def _reconcile(self, p: Provisioner, provider: Provider, now: datetime) -> None:
        with self.lock:
            busy = set(self.busy) | {rid for rid, (until, _) in self.paused.items() if until > time.monotonic()}
        gone = {r.id for r in p.live() if r.state in MADE and r.id not in busy
                and provider.alive(order_for(p, r)) is False}
        for step in next_steps(p, self._nodes(p), gone, busy, now):
            if provider.blocking and step.do in (Do.CREATE, Do.TIMED_OUT, Do.DELETE, Do.FINISH):
                self._in_thread(p, provider, step)
            else:
                self._do(p, provider, step)

    def _sweep(self, p: Provisioner, provider: Provider) -> None:
        """A node registered under the provisioner's name whose request has ended (an agent that came back after its
        node was deleted, say) is no node of it any more: deleted by the provider and removed, never left holding
        capacity nobody manages. Requests are in the log before their nodes, so a node being made is never one."""
        strays = [row for row in self.views.nodes.list()
                  if row.definition == p.name and row.name not in p.requests and row.name not in self.busy]
        fresh = self.roving.provisioners.find(p.name) if strays else None
        for row in strays:
            if fresh is None or row.name in fresh.requests or self.roving.repository.get(row.id).removed:
                continue
            order = Order(provisioner=p.name, request=row.name, node=row.name, attempt=1, template=p.spec.template,
                          settings=dict(p.spec.settings))
            try:
                provider.delete(order)
                self.roving.remove_node(row.id, PRINCIPAL, self.clock(), force=True)
            except (ProviderError, AppError) as error:
                log.warning("provisioner.stray_not_removed", provisioner=p.name, node=row.name, error=str(error))
                continue
            metrics.FAILURES.labels(p.name, "stray").inc()
            log.warning("provisioner.stray_removed", provisioner=p.name, node=row.name)

    def _nodes(self, p: Provisioner) -> dict[str, NodeFacts]:
        found = {}
        for r in p.live():
            row = self.views.nodes.by_name(r.id)
            if row is not None:
                found[r.id] = node_facts(row, self.views.provisioners.idle_since(row.id))
        return found

    def _in_thread(self, p: Provisioner, provider: Provider, step: Step) -> None:
        with self.lock:
            self.busy.add(step.request.id)

        def run() -> None:
            try:
                self._do(p, provider, step)
            except Exception:  # noqa: BLE001 - logged; the request is looked at again on the next tick
                log.exception("provisioner.step_failed", provisioner=p.name, request=step.request.id)
            finally:
                with self.lock:
                    self.busy.discard(step.request.id)
                self.wake.set()
        threading.Thread(target=run, name=f"roving-provision-{step.request.id}", daemon=True).start()

    def _current(self, p: Provisioner, r: Request) -> bool:
        """Whether the log (not the view, which may lag it) still has the request as the step saw it: a provider
        is never told to act on old news."""
        fresh = self.roving.provisioners.find(p.name)
        found = fresh.requests.get(r.id) if fresh is not None else None
        return found is not None and found.state is r.state

    def _do(self, p: Provisioner, provider: Provider, step: Step) -> None:
        if step.do in (Do.TIMED_OUT, Do.FINISH) and not self._current(p, step.request):
            return  # the request moved on meanwhile: the next look decides on what is true then
        try:
            getattr(self, f"_{step.do.value}")(p, provider, step.request, step.reason)
        except AppError as error:  # the request moved on meanwhile: the next tick decides again
            log.info("provisioner.step_refused", provisioner=p.name, request=step.request.id, step=step.do.value,
                     reason=str(error))

    def _create(self, p: Provisioner, provider: Provider, r: Request, reason: str) -> None:
        attempt = self.roving.start_create(p.name, r.id, self.clock())
        if attempt is None:
            return
        try:
            instance = provider.create(order_for(p, r, attempt))
        except ProviderError as error:
            retry = self.roving.record_create_failed(p.name, r.id, str(error), self.clock())
            metrics.FAILURES.labels(p.name, "create").inc()
            log.warning("provisioner.create_failed", provisioner=p.name, request=r.id, attempt=attempt,
                        error=str(error), retry_at=retry.isoformat() if retry else None)
            return
        self.roving.record_created(p.name, r.id, instance, self.clock())
        log.info("provisioner.created", provisioner=p.name, request=r.id, attempt=attempt, instance=instance)

    def _up(self, p: Provisioner, provider: Provider, r: Request, reason: str) -> None:
        row = self.views.nodes.by_name(r.id)
        latency = self.roving.record_up(p.name, r.id, str(row.id), self.clock()) if row is not None else None
        if latency is not None:
            metrics.LATENCY.labels(p.name).observe(latency)
            log.info("provisioner.node_up", provisioner=p.name, request=r.id, seconds=round(latency, 2))

    def _timed_out(self, p: Provisioner, provider: Provider, r: Request, reason: str) -> None:
        """Whatever was made goes before the request is asked again (a create by the same id would find it)."""
        try:
            provider.delete(order_for(p, r))
        except ProviderError as error:
            log.warning("provisioner.delete_failed", provisioner=p.name, request=r.id, error=str(error))
        retry = self.roving.record_create_failed(p.name, r.id, reason, self.clock())
        metrics.FAILURES.labels(p.name, "boot_timeout").inc()
        log.warning("provisioner.node_not_up", provisioner=p.name, request=r.id, reason=reason,
                    retry_at=retry.isoformat() if retry else None)

    def _cancel(self, p: Provisioner, provider: Provider, r: Request, reason: str) -> None:
        self.roving.cancel_request(p.name, r.id, reason, self.clock())

    def _drain(self, p: Provisioner, provider: Provider, r: Request, reason: str) -> None:
        if self.roving.drain_node(p.name, r.id, reason, self.clock(), even_if_busy=p.deleted):
            log.info("provisioner.draining", provisioner=p.name, request=r.id, reason=reason)

    def _delete(self, p: Provisioner, provider: Provider, r: Request, reason: str) -> None:
        if self.roving.start_delete(p.name, r.id, reason, self.clock()):
            if reason.startswith("lost"):
                metrics.FAILURES.labels(p.name, "lost").inc()
                log.warning("provisioner.node_lost", provisioner=p.name, request=r.id, reason=reason)
            self._finish(p, provider, r, reason)

    def _finish(self, p: Provisioner, provider: Provider, r: Request, reason: str) -> None:
        try:
            provider.delete(order_for(p, r))
        except ProviderError as error:
            metrics.FAILURES.labels(p.name, "delete").inc()
            pause = self._pause(r.id)
            log.warning("provisioner.delete_failed", provisioner=p.name, request=r.id, error=str(error),
                        retry_in_s=pause)
            return
        with self.lock:
            self.paused.pop(r.id, None)
        if self.roving.finish_delete(p.name, r.id, self.clock()):
            log.info("provisioner.deleted", provisioner=p.name, request=r.id, reason=reason)

    def _pause(self, request_id: str) -> float:
        with self.lock:
            _, last = self.paused.get(request_id, (0.0, DELETE_RETRY_FIRST / 2))
            pause = min(last * 2, DELETE_RETRY_LONGEST)
            self.paused[request_id] = (time.monotonic() + pause, pause)
        return pause
