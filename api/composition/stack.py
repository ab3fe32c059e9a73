"""The composition root: NATS, the application, views, tailer, leases, scheduler, HTTP app and local agents.

Its parts' own modules: the first start's admin and tokens (bootstrap), the local node pool (local_pool), what the
routes read through the log connection (readers), the scheduler runner and its state (api.scheduler).
"""

from __future__ import annotations

import os
import signal
import threading
import time
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING

import structlog
import uvicorn
from eventsourcing.persistence import OperationalError

from adapters.auth.tokens import load_or_create_key
from adapters.catalog_store import open_catalog
from adapters.jetstream.connection import Connection
from adapters.leases import Leases
from adapters.log_probe import LogProbe
from adapters.nats_auth import agent_log_url
from adapters.nats_owner import death_signal
from adapters.nats_server import NatsServer
from adapters.nats_supervisor import Supervisor
from adapters.secret_store import open_secret_store
from api.composition.audit_lease import AuditByLease
from api.composition.bootstrap import bootstrap_admin, password_hasher
from api.composition.local_pool import LocalPool, local_work_dir
from api.composition.readers import LogReader, object_store
from api.composition.services import Services
from api.composition.settings import Settings
from api.composition.wakeups import AssignmentWaiters, Listener, LogSignals
from api.http.positions import PositionWaiters
from api.scheduler.runner import SchedulerRunner
from api.scheduler.state import SchedulerState
from api.up.local_agents import LocalAgents
from domain.app import ReadModelFunctions, Roving

if TYPE_CHECKING:  # built lazily in start(): `roving` commands that need no stack do not import them
    from starlette.applications import Starlette

    from adapters.audit_feed import AuditFeed
    from adapters.audit_log import AuditLog
    from adapters.duckdb_store import AuditStore
    from adapters.monitoring import Monitoring
    from adapters.tailer import Tailer
    from adapters.traffic import EndpointTraffic
    from adapters.view_snapshots import ViewSnapshots
    from api.composition.agent_push import StartsPublisher
    from api.composition.agent_reports import ReportsResponder
    from api.composition.autoscaling import AutoscalerLoop
    from api.composition.refused_alerts import RefusedAlertsLoop
    from api.provisioning.runner import ProvisionerRunner
    from api.provisioning.storage_runner import StorageRunner
    from projections.views import Views

log = structlog.get_logger("roving.stack")
AUDIT_OWNER = "audit-owner"
DETACH = signal.SIGUSR1  # api.agent.agent.DETACH (not imported: the agent's modules are not the stack's to load)


class Stack(LocalPool):
    """Everything one control-plane process runs; `roving up` adds the embedded server and local agents."""

    def __init__(self, settings: Settings, embedded_nats: bool = True, scheduler: bool = True,
                 audit: bool | str = True, internal_url: str = "", provisioners: bool = True) -> None:
        """`audit`: feed the audit here (True), not at all (False), or while this scheduler leads ("lease");
        `internal_url`: where other workers reach this one's API (audit reads are forwarded there)."""
        self.settings = settings
        self.data_dir = Path(settings.data_dir)
        self.embedded_nats = embedded_nats and not settings.nats_url
        self.with_scheduler = scheduler
        self.nats: NatsServer | None = None
        self.supervisor: Supervisor | None = None
        # a crash of ours (kill -9) detaches them, as a graceful stop does: their jobs run on for the next start to
        # adopt; a dead one comes back (unless ROVING_LOCAL_AGENT_RESTART=false)
        self.agents = LocalAgents(preexec=death_signal(os.getpid(), DETACH), restart=settings.local_agent_restart)
        self.server: uvicorn.Server | None = None
        self.audit_store: AuditStore | None = None
        self.audit_feed: AuditFeed | None = None
        self.audit: AuditLog | None = None
        self.with_audit = audit
        self.internal_url = internal_url
        self.monitoring: Monitoring | None = None
        self.autoscaler: AutoscalerLoop | None = None
        self.refused_alerts: RefusedAlertsLoop | None = None
        # what start() builds; stop() skips what is None
        self.runner: SchedulerRunner | None = None
        self.tailer: Tailer | None = None
        self.leases: Leases | None = None
        self.roving: Roving | None = None
        self.log_probe: LogProbe | None = None
        self.audit_lease: AuditByLease | None = None  # audit="lease": the audit runs while this runner leads
        self.with_provisioners = provisioners
        self.provisioner_runner: ProvisionerRunner | None = None
        self.storage_runner: StorageRunner | None = None  # volume provisioners' programs
        self.scheduling = SchedulerState()  # the runner's last pass, which the API and the UI show
        # start() builds the rest; a parent of API workers never calls it and holds None
        self.views: Views | None = None
        self.key: bytes | None = None  # the signing key of tokens and view snapshots
        self.snapshots: ViewSnapshots | None = None  # None also when ROVING_VIEW_SNAPSHOT_EVERY is 0
        self.signals: LogSignals | None = None
        self.waiters: AssignmentWaiters | None = None
        self.positions: PositionWaiters | None = None
        self.traffic: EndpointTraffic | None = None
        self.services: Services | None = None
        self.agent_push: StartsPublisher | None = None  # the leader's process pushes agents their work over NATS
        self.agent_reports: ReportsResponder | None = None  # agents' batched reports over NATS, in every worker

    @property
    def url(self) -> str:
        host, _, port = self.settings.listen.rpartition(":")
        return f"{getattr(self.settings, 'scheme', 'http')}://{host}:{port}"

    def start(self) -> Stack:
        close_data_dir(self.data_dir)
        nats_url = self.settings.nats_url or self.start_nats()
        cluster = self.settings.cluster
        env = {"PERSISTENCE_MODULE": "adapters.jetstream", "ROVING_NATS_URL": nats_url, "ROVING_CLUSTER": cluster,
               "ROVING_NATS_REPLICAS": str(self.settings.nats_replicas)}
        from projections.provisioners import pool_definitions
        from projections.snapshot import node_segments
        from projections.views import Views

        views = self.views = Views(hot_workflows=self.settings.hot_workflows)
        read_models = ReadModelFunctions(definitions=lambda: pool_definitions(views.nodes, views.provisioners),
                                         priorities=views.tenancy.owner_priorities,
                                         allocations_of_owner=views.queue.live_allocations_of,
                                         running_on=lambda node: [a.id for a in views.queue.running_on(node)],
                                         segments=lambda: node_segments(views.nodes),
                                         projects=views.projects.paths,
                                         projects_of=views.projects.member_of)
        roving = self.roving = Roving(env=env, passwords=password_hasher(), read_models=read_models)
        key = self.key = load_or_create_key(self.data_dir / "signing.key")
        bootstrap_admin(roving, self.data_dir, key)
        waiters = self.waiters = AssignmentWaiters(views)
        positions = self.positions = PositionWaiters(views)
        # who hears each batch once the views applied it, in this order: the repository first (commands trust
        # memory, so whatever a later listener wakes finds each aggregate as the log has it, never older), then the
        # agents' long polls (an answer is read from the views just applied), then requests waiting for a log
        # position (read-your-writes); the scheduler runner and the provisioners listen after these, from their
        # own __init__, in the order start() builds them (they only set their wake events)
        tailer, signals = self._follow_log(roving, views, key, (roving.repository.observe, waiters.observe,
                                                               positions.observe))
        # every stream the stack makes on this connection (leases, probe, job logs, objects) takes the replicas
        connection = Connection(nats_url, cluster, replicas=self.settings.nats_replicas)
        leases = self.leases = Leases(connection, ttl=self.settings.node_lease_seconds)
        log_probe = self.log_probe = LogProbe(leases.connection, store=self._embedded_store()).start()
        runner = self.runner = self._start_scheduler(roving, views, tailer, leases, signals)
        self.provisioner_runner = self._start_provisioners(roving, leases, tailer, cluster)
        if self.with_provisioners:
            from api.provisioning.storage_runner import StorageRunner

            self.storage_runner = StorageRunner(roving, leases, signals, ready=tailer.caught_up.is_set).start()
        if self.with_audit and self.with_audit != "lease":
            self._start_audit(roving, cluster)
        from adapters.prometheus_query import PrometheusQueries
        from adapters.traffic import EndpointTraffic
        from api.composition.autoscaling import AutoscalerLoop

        traffic = self.traffic = EndpointTraffic()
        self.autoscaler = AutoscalerLoop(roving, views, traffic, interval=self.settings.autoscale_interval,
                                         queries=PrometheusQueries(self._prometheus_url)).start()
        services = self.services = Services(
            roving=roving, views=views, tailer=tailer, key=key, leases=leases,
            logs=LogReader(leases.connection, cluster, self.settings.job_log_max_age, self.settings.job_log_max_bytes),
            settings=self.settings, nats_url=nats_url, cluster=cluster,
            agent_nats_url=agent_log_url(nats_url, self.data_dir, self.settings.nats_agent_creds) or "",
            runner=runner, audit=self.audit, waiters=waiters, traffic=traffic,
            secrets=open_secret_store(roving, self.data_dir), positions=positions,
            catalog=open_catalog(roving, views.catalog_sources.sources, self.data_dir),
            log_probe=log_probe, scheduling=self.scheduling,
        )
        services.objects = object_store(leases.connection, cluster, self.settings.object_max_bytes)
        self.agent_push = self._start_agent_push(leases.connection, cluster, key, waiters, services, signals)
        from api.composition.agent_reports import ReportsResponder  # agents' reports over NATS, in every worker

        self.agent_reports = ReportsResponder(roving, views, key, leases.connection, cluster).start()
        if self.with_audit == "lease" and runner is not None:
            self._follow_audit_lease(roving, leases, runner, cluster, services)
        return self

    def _follow_log(self, roving: Roving, views: Views, key: bytes,
                    listeners: tuple[Listener, ...]) -> tuple[Tailer, LogSignals]:
        """The tailer feeding the views (from their snapshot, when kept), its signals to `listeners` in order, and
        commands that trust memory (the repository hears every event the tailer sees)."""
        from adapters.tailer import Tailer

        if self.settings.view_snapshot_every:
            from adapters.view_snapshots import ViewSnapshots

            self.snapshots = ViewSnapshots(self.data_dir / "views.snapshot", key, roving.recorder,
                                           every=self.settings.view_snapshot_every)
        tailer = self.tailer = Tailer(roving, views, snapshots=self.snapshots)
        signals = self.signals = LogSignals.attach(tailer)
        roving.repository.follow_log()
        for listener in listeners:
            signals.listen(listener)
        tailer.start()
        return tailer, signals

    def _start_scheduler(self, roving: Roving, views: Views, tailer: Tailer, leases: Leases,
                         signals: LogSignals) -> SchedulerRunner | None:
        """The scheduler runner (it schedules while it holds the lease) and the loop turning refused alerts into
        holds beside it."""
        if not self.with_scheduler:
            return None
        from api.composition.refused_alerts import RefusedAlertsLoop

        runner = SchedulerRunner(roving, views, tailer, leases, signals=signals, state=self.scheduling).start()
        self.refused_alerts = RefusedAlertsLoop(roving, views, runner, follower=tailer).start()
        return runner

    def _start_provisioners(self, roving: Roving, leases: Leases, tailer: Tailer,
                            cluster: str) -> ProvisionerRunner | None:
        """Where the scheduler runs, its leader asks provisioners for nodes; a control plane that serves the API
        also runs the providers, each under its provisioner's lease (api.provisioning)."""
        if self.runner is None:
            return None
        from adapters.provisioners import AgentLaunch
        from api.provisioning.asks import Asks
        from api.provisioning.runner import ProvisionerRunner

        self.runner.after_pass.append(Asks(roving))
        if not self.with_provisioners:
            return None
        launch = AgentLaunch(api=self.url, token_file=self.data_dir / "agent.token",
                             work_root=local_work_dir(self.data_dir, cluster), log_dir=self.data_dir)
        return ProvisionerRunner(roving, self.views, leases, launch, signals=self.signals,
                                 preexec=death_signal(os.getpid(), DETACH), ready=tailer.caught_up.is_set).start()

    def _start_agent_push(self, connection: Connection, cluster: str, key: bytes, waiters: AssignmentWaiters,
                          services: Services, signals: LogSignals) -> StartsPublisher:
        """Agents hear of their work over NATS (api/composition/agent_push.py) from the scheduler leader's process
        (every process records what it pushes); its listener goes first, so a held poll never answers that."""
        runner = self.runner
        from api.composition.agent_push import StartsPublisher

        ttl = timedelta(seconds=getattr(self.settings, "workflow_token_ttl_seconds", 7 * 86400.0))  # as the route's
        leading = (lambda: runner.leading) if runner is not None else (lambda: False)
        push = StartsPublisher(self.views, key, connection, cluster, waiters, leading,
                               secrets=services.secrets, token_ttl=ttl).start()
        # before the repository's and the long polls' listeners (the order _follow_log set): what is pushed is
        # recorded as pushed before a held poll could answer it again
        signals.listeners.insert(0, push.observe)
        return push

    def _follow_audit_lease(self, roving: Roving, leases: Leases, runner: SchedulerRunner, cluster: str,
                            services: Services) -> None:
        """The audit runs in whichever worker's runner leads; the others forward audit reads to its private
        address (`internal_url`), which it announces while it holds the audit."""

        def publish(audit: AuditLog | None) -> None:
            services.audit = audit
            if audit is not None and self.internal_url:
                leases.announce(AUDIT_OWNER, self.internal_url)

        services.audit_owner = lambda: leases.announced(AUDIT_OWNER)
        self.audit_lease = AuditByLease(runner, lambda: self._open_audit(roving, cluster), publish).start()

    def _save_views(self) -> None:
        """A stopping control plane leaves its views behind, so the next start replays only what follows."""
        views = self.views
        if self.snapshots is None or views is None or views.position <= self.snapshots.saved_position:
            return
        try:
            self.snapshots.save(views)
        except OperationalError as error:  # the log went first (an API worker whose parent and NATS were killed)
            log.warning("stack.view_snapshot_skipped", reason=str(error))
        except Exception:  # noqa: BLE001 - the next start rebuilds from the log instead
            log.exception("stack.view_snapshot_failed")

    def _start_audit(self, roving: Roving, cluster: str) -> None:
        """The audit table in $ROVING_DATA_DIR/audit.duckdb, fed from the log; DuckDB allows one process."""
        self.audit_store, self.audit, self.audit_feed = self._open_audit(roving, cluster)

    def _open_audit(self, roving: Roving, cluster: str) -> tuple[AuditStore, AuditLog, AuditFeed]:
        from adapters.audit_feed import AuditFeed
        from adapters.audit_log import AuditLog
        from adapters.duckdb_store import AuditStore
        from api.composition.retention import archive_dir, start_retention
        from projections.audit import AuditProjection

        store = AuditStore(self.data_dir / "audit.duckdb", archive=archive_dir(self.data_dir))
        audit, feed = AuditLog(store), AuditFeed(roving.recorder, AuditProjection(store, cluster)).start()
        start_retention(roving, self.views, store, audit, feed, self.data_dir, cluster, self.settings.retention_interval)
        return store, audit, feed

    def start_nats(self) -> str:
        """Ours dies with us (a SIGKILLed control plane leaves no server behind) and comes back when it dies."""
        from adapters.batch_staging import BatchStaging, memory_dir
        from api.metrics import NATS_RESTARTS

        self.nats = NatsServer(self.data_dir / "nats", port=self.settings.nats_port, die_with_parent=True).start()
        memory = memory_dir()
        staging = BatchStaging(self.nats.store_dir, memory) if memory is not None else None
        self.supervisor = Supervisor(self.nats, on_restart=NATS_RESTARTS.inc, staging=staging).start()
        return self.nats.url

    def _embedded_store(self) -> Path | None:
        """The store of `roving up`'s own server (this process's, or its parent's for an API worker), if any."""
        store = self.data_dir / "nats"
        return store if not self.settings.nats_url or (store / "jetstream").is_dir() else None

    def app(self) -> Starlette:
        from api.http.app import create_app

        if self.services is None:
            raise RuntimeError("a stack serves its API once start() built its services")
        return create_app(self.settings, self.services)

    def serve(self, in_thread: bool = False, sockets: list | None = None) -> None:
        """Serve the API on `settings.listen`, or on `sockets` already bound (a worker's shared port)."""
        from api.http.serving import Server, uvicorn_config

        waiters = self.waiters
        self.server = Server(uvicorn_config(self.app(), self.settings),
                             before_shutdown=waiters.close if waiters is not None else None)
        if not in_thread:
            self.server.run(sockets=sockets)
            return
        threading.Thread(target=self.server.run, kwargs={"sockets": sockets}, name="roving-http", daemon=True).start()
        deadline = time.monotonic() + 20
        while not self.server.started and time.monotonic() < deadline:
            time.sleep(0.05)

    def _prometheus_url(self) -> str:
        """Where the autoscaler's queries go: the admin's Prometheus, else the one `--monitoring` runs, else none."""
        if self.settings.prometheus_url:
            return self.settings.prometheus_url
        return self.monitoring.prometheus.url if self.monitoring is not None else ""

    def start_monitoring(self, binaries: dict[str, str]):
        """Prometheus and Alertmanager (adapters.monitoring) watching this stack; they stop with it."""
        from adapters.monitoring import Monitoring

        host, _, port = self.settings.listen.rpartition(":")
        reachable = "127.0.0.1" if host in ("", "0.0.0.0", "::", "[::]") else host
        self.monitoring = Monitoring(self.data_dir, f"http://{reachable}:{port}", self.settings.monitoring_interval,
                                     self.settings.node_exporter_port, binaries).start()
        if self.services is not None:
            self.services.prometheus_url = self.monitoring.prometheus.url
        return self.monitoring

    def stop(self) -> None:
        if self.monitoring is not None:
            self.monitoring.stop()
        try:
            self._stop_parts()
        finally:  # whatever failed above, the embedded server goes (and the supervisor first, or it returns)
            if self.supervisor is not None:
                self.supervisor.stop()
            if self.nats is not None:
                self.nats.stop()
            if self.supervisor is not None and self.supervisor.staging is not None:
                self.supervisor.staging.close()  # its memory side, now that no server stages there

    def _stop_parts(self) -> None:
        self.stop_local_agents()
        if self.server is not None:
            self.server.should_exit = True
        for part in (self.log_probe, self.provisioner_runner, self.autoscaler, self.refused_alerts, self.audit_lease,
                     self.runner, self.tailer, self.storage_runner,
                     self.audit_feed, self.agent_push, self.agent_reports):
            if part is not None:
                part.stop()
        if self.roving is None:  # a parent of API workers: it started no control plane of its own
            return
        self._save_views()
        if self.audit_store is not None:
            self.audit_store.close()
        if self.leases is not None:  # None when start() failed before it
            self.leases.connection.close()
        self.roving.close()


def close_data_dir(data_dir: Path) -> None:
    """The data directory holds every tenant's audit rows, archived events, view snapshots and the stack's keys:
    made 0700, and closed to other local users when an older one was open (a directory we do not own is left as its
    owner set it, and said)."""
    data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    mode = data_dir.stat().st_mode & 0o777
    if mode & 0o077 == 0:
        return
    if data_dir.stat().st_uid != os.geteuid():
        log.warning("stack.data_dir_open", path=str(data_dir), mode=oct(mode))
        return
    data_dir.chmod(0o700)
    log.info("stack.data_dir_closed", path=str(data_dir), was=oct(mode))
