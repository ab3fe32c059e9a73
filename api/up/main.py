"""`roving up` (the whole local stack) and `roving api` (the control plane against an existing NATS)."""

from __future__ import annotations

import argparse
import os
import signal
import sys
from pathlib import Path

import msgspec

from adapters.monitoring import MonitoringError
from adapters.nats_server import NatsServerError

UP_HELP = """Start Roving locally: an embedded nats-server (unless ROVING_NATS_URL is set), the control plane
(HTTP API, read models, scheduler) and a pool of local node agents that really run submitted work.

Settings come from the environment:
  ROVING_DATA_DIR            where the log, keys and tokens live (default ./.roving)
  ROVING_LISTEN              HTTP address (default 127.0.0.1:8080)
  ROVING_LOCAL_NODES         local agents to start (default 2)
  ROVING_LOCAL_AGENT_RESTART start a local agent again when it dies (default true; false to study node loss)
  ROVING_STOP_LOCAL_JOBS     a stop of roving up stops the local jobs too (default false: they run on, and the
                             next roving up on this data dir adopts them)
  ROVING_LOCAL_NODE_CPUS     cpus each local node declares (default 4)
  ROVING_LOCAL_NODE_MEMORY   memory each local node declares (default 8GiB)
  ROVING_NATS_URL            use this NATS (cluster) instead of starting one
  ROVING_NATS_REPLICAS       replicas of every stream, KV bucket and object store (default 1; 3 on a
                             three-server cluster; an existing layout is moved up to it at start)
  ROVING_LOG_WRITE_TIMEOUT   a write the log cannot take within it answers 503 with Retry-After (default 10s)
  ROVING_NATS_CREDS          the control plane's user file for it (`user: NAME`, `password: SECRET`),
                             or ROVING_NATS_USER and ROVING_NATS_PASSWORD
  ROVING_NATS_AGENT_CREDS    the user file agents are given for the job log (never the control plane's)
  ROVING_NATS_TLS_CA         the CA its servers' certificates chain to (makes every connection TLS);
                             ROVING_NATS_TLS_CERT and ROVING_NATS_TLS_KEY: a client certificate, if asked for
  ROVING_TLS_CERT            the API's certificate (PEM) with ROVING_TLS_KEY: serve https, answers carry HSTS
  ROVING_TLS_KEY             its private key (PEM); set both or neither
  ROVING_HEADER_TIMEOUT      a request's headers must arrive within it, else 408 (default 10s)
  ROVING_BODY_TIMEOUT        the longest wait for the next piece of a request body, else 408 (default 30s)
  ROVING_TRUSTED_PROXIES     reverse proxies whose X-Forwarded-Proto/-For are believed (default 127.0.0.1,::1)
  ROVING_MAX_BODY_BYTES      the largest request body, e.g. 16MiB (default 4MiB; not for /endpoints/ uploads)
  ROVING_API_WORKERS         API processes sharing the port (default 1; `auto`: one a core, at most 8; or --workers);
                             one of them runs the scheduler and the audit feed, by the scheduler's lease
The embedded server refuses anonymous clients: its users' credentials are in $ROVING_DATA_DIR/nats/credentials
(control, agent, federation, reader; mode 0600) and its store is encrypted with $ROVING_DATA_DIR/nats/store.key.
The cluster admin's token is written to $ROVING_DATA_DIR/admin.token (mode 0600).

With --monitoring, Prometheus and Alertmanager (Debian packages prometheus and prometheus-alertmanager) run
too, on free loopback ports, with their configs and data in $ROVING_DATA_DIR/monitoring: Prometheus scrapes
the control plane and every agent (service discovery from /v4/nodes/-/sd_config), evaluates
ops/prometheus/roving-rules.yml, and Alertmanager posts fb_action alerts to /v4/alerts with the token in
$ROVING_DATA_DIR/alertmanager.token, so alerts place and release monitoring holds.
  ROVING_MONITORING_INTERVAL  scrape, rule evaluation and alert grouping pace (default 15s)
  ROVING_NODE_EXPORTER_PORT   each node's node exporter, scraped for the dashboards (default 9100; 0: none)
  ROVING_PROMETHEUS, ROVING_ALERTMANAGER  the binaries (default: prometheus, prometheus-alertmanager on PATH)"""


def _settings():
    from api.composition.settings import Settings, SettingsError

    try:
        return Settings.from_env()
    except SettingsError as error:
        print(f"roving: {error}", file=sys.stderr)
        raise SystemExit(2) from error


def up_main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="roving up", description=UP_HELP,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--monitoring", action="store_true",
                        help="also run Prometheus and Alertmanager with Roving's rules and webhook route")
    _workers_option(parser)
    args = parser.parse_args(argv)
    binaries = None
    if args.monitoring:
        from adapters.monitoring import find_binaries

        try:
            binaries = find_binaries()
        except MonitoringError as error:
            print(f"roving: {error}", file=sys.stderr)
            return 1
    return _run(local_agents=True, monitoring=binaries, workers=args.workers)


def api_main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="roving api", description="Run the HTTP API, read models and scheduler "
                                     "against ROVING_NATS_URL (no embedded server, no local agents).")
    _workers_option(parser)
    return _run(local_agents=False, workers=parser.parse_args(argv).workers)


def _workers_option(parser: argparse.ArgumentParser) -> None:
    def count(raw: str) -> int:
        from api.composition.settings import SettingsError, api_workers

        try:
            return api_workers(raw)
        except SettingsError:
            raise argparse.ArgumentTypeError(f"--workers must be a whole number of at least 1 or auto, got {raw!r}") \
                from None

    parser.add_argument("--workers", type=count, default=None, metavar="N",
                        help="API processes sharing the port (default ROVING_API_WORKERS, else 1; auto: one a "
                             "core, at most 8)")


def _start_monitoring(stack, binaries: dict[str, str]) -> None:
    watching = stack.start_monitoring(binaries)
    print(f"Prometheus at {watching.prometheus.url}, Alertmanager at {watching.alertmanager.url} "
          f"(configs and data in {watching.dir})", flush=True)


def greeting(url: str, data_dir: Path) -> str:
    """What `roving up` prints once it serves: the API with the admin token, the web UI with how to sign in."""
    token = (data_dir / "admin.token").read_text().strip()
    password = data_dir / "admin.password"
    secret = (f"the password is in {password}" if password.exists()
              else f"its password was written to {password} on the first start, which is gone now")
    return "\n".join([
        f"Roving is up at {url}",
        f"admin token: {token}",
        f"  (also in {data_dir / 'admin.token'}; try: ROVING_API={url} "
        f"ROVING_TOKEN=$(cat {data_dir / 'admin.token'}) roving node list)",
        f"Web UI: {url}/ui/ (sign in as admin; {secret})",
    ])


def pool_warning(local_agents: bool) -> str:
    """What a local pool cannot promise here, said once at start: run as a normal user, its jobs share this user, so
    it runs only the admin's work (bubblewrap keeps them from the data directory, the checkout, the venv and the
    home, and mounts volumes at their paths); as root, without bubblewrap, volumes cannot be mounted at their paths."""
    if not local_agents:
        return ""
    from adapters.runtime.host import INSTALL, HostSandbox

    sandbox = HostSandbox.found()
    if os.geteuid() != 0 and sandbox is not None:
        return ("note: the local pool is single-user: its jobs run as you (each in a sandbox: the node read-only, its "
                "own directory and /tmp), so it runs only the admin's work; run roving up as root to share it")
    if os.geteuid() != 0:
        return (f"warning: the local pool is single-user: its jobs run as you, and without bubblewrap nothing keeps "
                f"them from this data directory, so it runs only the admin's work; {INSTALL}")
    if sandbox is None:
        return (f"note: the local pool cannot mount volumes at their Fuzzfile paths (stages that do are refused): "
                f"{INSTALL}")
    return ""


def _exit_on_sigterm() -> None:
    """uvicorn re-raises the signal it caught after shutting down; ours turns it into a clean exit."""
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))


def _run(local_agents: bool, monitoring: dict[str, str] | None = None, workers: int | None = None) -> int:
    from api.composition.stack import Stack

    settings = _settings()
    if workers is not None:
        settings = msgspec.structs.replace(settings, api_workers=workers)
    from api.logs import configure_logging
    from api.up.workers import log_level

    configure_logging(os.environ.get("ROVING_LOG_FORMAT", ""), log_level())
    _exit_on_sigterm()
    if settings.api_workers > 1:
        return _run_workers(settings, local_agents, monitoring)
    try:
        stack = Stack(settings, embedded_nats=local_agents).start()
    except NatsServerError as error:
        print(f"roving: {error}", file=sys.stderr)
        return 1
    try:
        if local_agents:
            stack.start_local_agents(settings.local_nodes, settings.local_node_cpus, settings.local_node_memory,
                                     metrics=monitoring is not None)
        if monitoring is not None:
            _start_monitoring(stack, monitoring)
        print("\n".join(filter(None, [greeting(stack.url, stack.data_dir), pool_warning(local_agents)])), flush=True)
        stack.serve()
    except MonitoringError as error:
        print(f"roving: {error}", file=sys.stderr)
        return 1
    except OSError as error:
        return _cannot_listen(settings, error)
    finally:
        stack.stop()
    return 0


def _run_workers(settings, local_agents: bool, monitoring: dict[str, str] | None) -> int:
    """The parent of ROVING_API_WORKERS API processes on one port (api.up.workers): it runs the embedded NATS,
    the local agents and monitoring, keeps the workers, and stops them all on SIGTERM or SIGINT."""
    from adapters.auth.tokens import load_or_create_key
    from adapters.nats_owner import death_signal
    from api.composition.stack import Stack
    from api.up.workers import Workers

    stack = Stack(settings, embedded_nats=local_agents)  # not started: the parent runs no control plane itself
    pool: Workers | None = None
    try:
        stack.data_dir.mkdir(parents=True, exist_ok=True)
        nats_url = settings.nats_url or stack.start_nats()
        load_or_create_key(stack.data_dir / "signing.key")  # made once, before any worker signs with it
        pool = Workers(settings, nats_url, preexec=death_signal(os.getpid())).start()
        pool.wait_ready(at_least=1)
        if local_agents:  # as soon as one worker serves, as the single process starts them when it serves: a
            # restarted stack's nodes must rejoin before work is placed on what their last run left behind
            stack.start_local_agents(settings.local_nodes, settings.local_node_cpus, settings.local_node_memory,
                                     metrics=monitoring is not None)
        pool.wait_ready()
        if monitoring is not None:
            _start_monitoring(stack, monitoring)
        print(greeting(stack.url, stack.data_dir) + f"\n({settings.api_workers} API workers)", flush=True)
        while True:
            signal.pause()
    except (NatsServerError, MonitoringError, RuntimeError) as error:
        print(f"roving: {error}", file=sys.stderr)
        return 1
    except OSError as error:
        return _cannot_listen(settings, error)
    except KeyboardInterrupt:
        return 0
    finally:
        stack.stop_local_agents()  # agents before the workers they talk to, and NATS last
        if pool is not None:
            pool.stop()
        stack.stop()


def _cannot_listen(settings, error: OSError) -> int:
    print(f"roving: cannot listen on {settings.listen}: {error.strerror or error}; set ROVING_LISTEN", file=sys.stderr)
    return 1
