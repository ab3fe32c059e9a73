"""Process settings: one msgspec `Settings` read from the `ROVING_*` environment in one place."""

from __future__ import annotations

import os
import ssl
import urllib.parse
from collections.abc import Mapping
from pathlib import Path

import msgspec

from adapters.jetstream.subjects import check_cluster_name
from adapters.nats_auth import Credentials, CredentialsError, read_credentials
from adapters.nats_tls import with_tls
from domain.durations import DurationError, parse_duration
from domain.quantities import QuantityError, parse_memory

LOG_FORMATS = ("json", "console")
DEFAULT_WORKERS = 1
MAX_AUTO_WORKERS = 8


class SettingsError(ValueError):
    """A setting that cannot be read; the one-line message names the variable and what it accepts."""


class Settings(msgspec.Struct, frozen=True, kw_only=True):
    """Everything a Roving process needs from its environment, already parsed and checked."""

    data_dir: Path = Path("./.roving")
    listen: str = "127.0.0.1:8080"
    local_nodes: int = 2
    local_node_cpus: int = 4
    local_node_memory: int = 8 * 2**30
    local_agent_restart: bool = True  # `roving up` starts a local agent again when it dies
    stop_local_jobs: bool = False  # a graceful stop of `roving up` stops the local jobs too (default: they run on)
    nats_url: str | None = None  # with the control plane's credentials in it, when a site gives them
    nats_agent_creds: Path | None = None  # the user file agents get for the job log (ROVING_NATS_AGENT_CREDS)
    cluster: str = "local"
    log_format: str = "json"
    token_ttl_seconds: float = 15 * 60.0  # a person's access token; the refresh token renews it
    refresh_ttl_seconds: float = 14 * 86400.0  # a person's refresh token (each refresh issues a new one)
    ui_session_ttl_seconds: float = 12 * 3600.0  # the web UI's session cookie (no refresh token in a browser)
    nats_port: int = 0
    node_lease_seconds: float = 10.0
    view_snapshot_every: int = 50_000  # applied events between view snapshots; 0: never snapshot
    federation_hub: str | None = None
    max_body_bytes: int = 4 * 2**20  # a request body over it is answered 413 (api.http.limits)
    monitoring_interval: float = 15.0  # `roving up --monitoring`: scrape, evaluation and alert grouping pace
    autoscale_interval: float = 2.0  # how often the autoscaler samples endpoint traffic and decides pools' sizes
    prometheus_url: str = ""  # the Prometheus autoscaler queries ask (else `roving up --monitoring`'s own)
    node_exporter_port: int = 9100  # where --monitoring scrapes each node's node exporter (0: none)
    tls_cert: Path | None = None  # with tls_key: the API serves https, and answers carry HSTS
    tls_key: Path | None = None
    header_timeout_seconds: float = 10.0  # a request's headers must all arrive within it (api.http.timeouts)
    body_timeout_seconds: float = 30.0  # the longest wait for the next piece of a request body
    trusted_proxies: str = "127.0.0.1,::1"  # whose X-Forwarded-Proto and -For are believed (uvicorn's forwarded_allow_ips)
    api_workers: int = 1  # API processes sharing the listening port (ROVING_API_WORKERS; see api_workers)
    object_max_bytes: int = 16 * 2**30  # the largest object a put may store (ROVING_OBJECT_MAX_BYTES)
    workflow_token_ttl_seconds: float = 7 * 86400.0  # FB_WORKFLOW_TOKEN's longest life; its workflow's end ends it sooner
    presets_dir: Path | None = None  # admin-deployed presets (ROVING_PRESETS_DIR); None: <data dir>/presets
    wake_seconds: float = 60.0  # how long a request waits for a pool scaled to zero to wake (ROVING_WAKE_TIMEOUT)
    hot_workflows: int = 10_000  # finished workflows the views keep in memory; older ones are read from the log
    nats_replicas: int = 1  # replicas of every stream, KV bucket and object store (ROVING_NATS_REPLICAS, 1..5)
    log_write_timeout_seconds: float = 10.0  # a write the log cannot take within it answers 503 (ROVING_LOG_WRITE_TIMEOUT)
    wake_waiters: int = 256  # requests that may wait on one endpoint's pool to wake; more are 503 (ROVING_WAKE_WAITERS)
    retention_interval: float = 3600.0  # between rounds of the event stream's retention, a file each (ROVING_RETENTION_INTERVAL)
    job_log_max_age: float = 7 * 86400.0  # job output older than it leaves the LOGS_<cluster> stream (ROVING_JOB_LOG_MAX_AGE)
    job_log_max_bytes: int = 0  # the LOGS_<cluster> stream's size limit, oldest output first (0: none; ROVING_JOB_LOG_MAX_BYTES)

    @property
    def presets(self) -> Path:
        return self.presets_dir or self.data_dir / "presets"

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Settings:
        """The same as `load_settings`."""
        return load_settings(environ)

    @property
    def scheme(self) -> str:
        return "https" if self.tls_cert else "http"

    @property
    def host(self) -> str:
        return self.listen.rpartition(":")[0] or "127.0.0.1"

    @property
    def port(self) -> int:
        return int(self.listen.rpartition(":")[2])


def load_settings(environ: Mapping[str, str] | None = None) -> Settings:
    """Settings from `environ` (default: the process environment); raises SettingsError naming the variable."""
    env = os.environ if environ is None else environ
    defaults = Settings()
    return Settings(
        data_dir=Path(env.get("ROVING_DATA_DIR") or defaults.data_dir),
        listen=_listen(env.get("ROVING_LISTEN"), defaults.listen),
        local_nodes=_count(env, "ROVING_LOCAL_NODES", defaults.local_nodes, minimum=0),
        local_node_cpus=_count(env, "ROVING_LOCAL_NODE_CPUS", defaults.local_node_cpus, minimum=1),
        local_node_memory=_memory(env.get("ROVING_LOCAL_NODE_MEMORY"), defaults.local_node_memory),
        local_agent_restart=_flag(env, "ROVING_LOCAL_AGENT_RESTART", defaults.local_agent_restart),
        stop_local_jobs=_flag(env, "ROVING_STOP_LOCAL_JOBS", defaults.stop_local_jobs),
        nats_url=_nats_url(env),
        nats_agent_creds=_creds_path(env, "ROVING_NATS_AGENT_CREDS"),
        cluster=_cluster(env.get("ROVING_CLUSTER"), defaults.cluster),
        log_format=_log_format(env.get("ROVING_LOG_FORMAT"), defaults.log_format),
        token_ttl_seconds=_ttl(env, "ROVING_TOKEN_TTL", defaults.token_ttl_seconds),
        refresh_ttl_seconds=_ttl(env, "ROVING_REFRESH_TTL", defaults.refresh_ttl_seconds),
        ui_session_ttl_seconds=_ttl(env, "ROVING_UI_SESSION_TTL", defaults.ui_session_ttl_seconds),
        nats_port=_count(env, "ROVING_NATS_PORT", defaults.nats_port, minimum=0),
        node_lease_seconds=_ttl(env, "ROVING_NODE_LEASE", defaults.node_lease_seconds),
        view_snapshot_every=_count(env, "ROVING_VIEW_SNAPSHOT_EVERY", defaults.view_snapshot_every, minimum=0),
        federation_hub=(env.get("ROVING_FEDERATION_HUB") or "").strip() or None,
        max_body_bytes=_body_bytes(env.get("ROVING_MAX_BODY_BYTES"), defaults.max_body_bytes),
        monitoring_interval=_ttl(env, "ROVING_MONITORING_INTERVAL", defaults.monitoring_interval),
        autoscale_interval=_ttl(env, "ROVING_AUTOSCALE_INTERVAL", defaults.autoscale_interval),
        prometheus_url=_prometheus_url(env.get("ROVING_PROMETHEUS_URL")),
        node_exporter_port=_count(env, "ROVING_NODE_EXPORTER_PORT", defaults.node_exporter_port, minimum=0),
        **_tls(env),
        header_timeout_seconds=_ttl(env, "ROVING_HEADER_TIMEOUT", defaults.header_timeout_seconds),
        body_timeout_seconds=_ttl(env, "ROVING_BODY_TIMEOUT", defaults.body_timeout_seconds),
        trusted_proxies=(env.get("ROVING_TRUSTED_PROXIES") or "").strip() or defaults.trusted_proxies,
        api_workers=api_workers(env.get("ROVING_API_WORKERS")),
        object_max_bytes=_size(env, "ROVING_OBJECT_MAX_BYTES", defaults.object_max_bytes),
        workflow_token_ttl_seconds=_ttl(env, "ROVING_WORKFLOW_TOKEN_TTL", defaults.workflow_token_ttl_seconds),
        presets_dir=Path(env["ROVING_PRESETS_DIR"]) if (env.get("ROVING_PRESETS_DIR") or "").strip() else None,
        wake_seconds=_ttl(env, "ROVING_WAKE_TIMEOUT", defaults.wake_seconds),
        hot_workflows=_count(env, "ROVING_HOT_WORKFLOWS", defaults.hot_workflows, minimum=0),
        nats_replicas=_replicas(env),
        log_write_timeout_seconds=_ttl(env, "ROVING_LOG_WRITE_TIMEOUT", defaults.log_write_timeout_seconds),
        wake_waiters=_count(env, "ROVING_WAKE_WAITERS", defaults.wake_waiters, minimum=1),
        retention_interval=_ttl(env, "ROVING_RETENTION_INTERVAL", defaults.retention_interval),
        job_log_max_age=_ttl(env, "ROVING_JOB_LOG_MAX_AGE", defaults.job_log_max_age),
        job_log_max_bytes=_size(env, "ROVING_JOB_LOG_MAX_BYTES", defaults.job_log_max_bytes),
    )


def _replicas(env: Mapping[str, str]) -> int:
    """ROVING_NATS_REPLICAS: 1 (one server) up to 5, JetStream's most; 3 for the shipped three-server cluster."""
    count = _count(env, "ROVING_NATS_REPLICAS", 1, minimum=1)
    if count > 5:
        raise SettingsError(f"ROVING_NATS_REPLICAS={count}: JetStream keeps at most 5 replicas of a stream")
    return count


def api_workers(raw: str | None) -> int:
    """ROVING_API_WORKERS: a count, or `auto` for one a core (at most MAX_AUTO_WORKERS); default DEFAULT_WORKERS.

    The default is 1: on a 2-core machine more processes only contend with nats-server and the scheduler for the
    same cores (82 five-job submits/s with 1 worker, 48 with 2: ops/bench/workers.py, in the README)."""
    if raw is not None and raw.strip().lower() == "auto":
        return max(1, min(os.cpu_count() or 1, MAX_AUTO_WORKERS))
    try:
        return _count({"ROVING_API_WORKERS": raw or ""}, "ROVING_API_WORKERS", DEFAULT_WORKERS, minimum=1)
    except SettingsError as error:
        raise SettingsError(f"{error} (or auto: one a core)") from None


def _tls(env: Mapping[str, str]) -> dict[str, Path | None]:
    """ROVING_TLS_CERT (PEM, the chain after the certificate) and ROVING_TLS_KEY, both or neither, checked by
    loading them: a key that does not match its certificate is named here, not at the first connection."""
    cert, key = _creds_path(env, "ROVING_TLS_CERT"), _creds_path(env, "ROVING_TLS_KEY")
    if bool(cert) != bool(key):
        raise SettingsError("ROVING_TLS_CERT and ROVING_TLS_KEY go together: set both or neither")
    if cert and key:
        try:
            ssl.create_default_context(ssl.Purpose.CLIENT_AUTH).load_cert_chain(cert, key)
        except (ssl.SSLError, OSError) as error:
            raise SettingsError(f"ROVING_TLS_CERT={str(cert)!r} and ROVING_TLS_KEY={str(key)!r} do not load "
                                f"as a PEM certificate and its private key: {error}") from None
    return {"tls_cert": cert, "tls_key": key}


def _nats_url(env: Mapping[str, str]) -> str | None:
    """ROVING_NATS_URL carrying the control plane's credentials and, with ROVING_NATS_TLS_CA (and a client
    certificate in ROVING_NATS_TLS_CERT/KEY, if the site asks for one), TLS trusting that CA."""
    url = _nats_credentials(env)
    tls = {name: _creds_path(env, f"ROVING_NATS_TLS_{name.upper()}") for name in ("ca", "cert", "key")}
    if not any(tls.values()):
        return url
    if not url:
        raise SettingsError("ROVING_NATS_TLS_CA, _CERT and _KEY need ROVING_NATS_URL "
                            "(`roving up` makes its own server's certificates)")
    if bool(tls["cert"]) != bool(tls["key"]):
        raise SettingsError("ROVING_NATS_TLS_CERT and ROVING_NATS_TLS_KEY go together: set both or neither")
    return with_tls(url, tls["ca"], tls["cert"], tls["key"])


def _nats_credentials(env: Mapping[str, str]) -> str | None:
    """ROVING_NATS_URL carrying the control plane's credentials: ROVING_NATS_CREDS (a user file: `user: NAME`
    and `password: SECRET` lines), else ROVING_NATS_USER and ROVING_NATS_PASSWORD, else what the URL has."""
    url = (env.get("ROVING_NATS_URL") or "").strip() or None
    creds = _creds_path(env, "ROVING_NATS_CREDS")
    user, password = env.get("ROVING_NATS_USER") or "", env.get("ROVING_NATS_PASSWORD") or ""
    if url is None:
        if creds or user or password:
            raise SettingsError("ROVING_NATS_CREDS, ROVING_NATS_USER and ROVING_NATS_PASSWORD need ROVING_NATS_URL "
                                "(`roving up` makes its own server's credentials)")
        return None
    if creds:
        try:
            return read_credentials(creds).url(url)
        except CredentialsError as error:
            raise SettingsError(f"ROVING_NATS_CREDS: {error}") from None
    if bool(user) != bool(password):
        raise SettingsError("ROVING_NATS_USER and ROVING_NATS_PASSWORD go together: set both or neither")
    return Credentials(user, password).url(url) if user else url


def _creds_path(env: Mapping[str, str], name: str) -> Path | None:
    raw = (env.get(name) or "").strip()
    if raw and not Path(raw).is_file():
        raise SettingsError(f"{name}={raw!r} is not a file")
    return Path(raw) if raw else None


def _flag(env: Mapping[str, str], name: str, default: bool) -> bool:
    raw = (env.get(name) or "").strip().lower()
    if not raw:
        return default
    if raw in ("1", "true", "yes", "on"):
        return True
    if raw in ("0", "false", "no", "off"):
        return False
    raise SettingsError(f"{name} must be true or false (1/0, yes/no, on/off), got {env[name]!r}")


def _count(env: Mapping[str, str], name: str, default: int, minimum: int) -> int:
    raw = env.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = int(raw.strip())
    except ValueError:
        raise SettingsError(f"{name}={raw!r} is not a whole number") from None
    if value < minimum:
        raise SettingsError(f"{name}={raw!r} must be at least {minimum}")
    return value


def _listen(raw: str | None, default: str) -> str:
    if not raw:
        return default
    host, sep, port = raw.strip().rpartition(":")
    if not sep or not port.isdigit() or not 0 < int(port) < 65536:
        raise SettingsError(f"ROVING_LISTEN={raw!r} must be HOST:PORT with a port from 1 to 65535, e.g. 127.0.0.1:8080")
    return f"{host or '127.0.0.1'}:{int(port)}"


def _memory(raw: str | None, default: int) -> int:
    if not raw:
        return default
    try:
        value = parse_memory(raw)
    except QuantityError as error:
        raise SettingsError(f"ROVING_LOCAL_NODE_MEMORY={raw!r}: {error}") from None
    if value <= 0:
        raise SettingsError(f"ROVING_LOCAL_NODE_MEMORY={raw!r} must be more than zero")
    return value


def _body_bytes(raw: str | None, default: int) -> int:
    """A size such as 4MiB or 4194304; below 64 KiB even a login or a small Fuzzfile would be refused."""
    if not raw:
        return default
    try:
        value = parse_memory(raw)
    except QuantityError as error:
        raise SettingsError(f"ROVING_MAX_BODY_BYTES={raw!r}: {error}") from None
    if value < 64 * 1024:
        raise SettingsError(f"ROVING_MAX_BODY_BYTES={raw!r} must be at least 64KiB")
    return value


def _size(env: Mapping[str, str], name: str, default: int) -> int:
    """A size such as 16GiB or 1000000, more than zero."""
    raw = env.get(name)
    if not raw:
        return default
    try:
        value = parse_memory(raw)
    except QuantityError as error:
        raise SettingsError(f"{name}={raw!r}: {error}") from None
    if value <= 0:
        raise SettingsError(f"{name}={raw!r} must be more than zero")
    return value


def _cluster(raw: str | None, default: str) -> str:
    if not raw:
        return default
    try:
        return check_cluster_name(raw)  # the rule the stream and subject names need, checked where they are made
    except ValueError as error:
        raise SettingsError(f"ROVING_CLUSTER={raw!r}: {error}") from None


def _log_format(raw: str | None, default: str) -> str:
    if not raw:
        return default
    if raw not in LOG_FORMATS:
        raise SettingsError(f"ROVING_LOG_FORMAT={raw!r} must be json or console")
    return raw


def _ttl(env: Mapping[str, str], name: str, default: float) -> float:
    raw = env.get(name)
    if not raw:
        return default
    try:
        value = parse_duration(raw)
    except DurationError as error:
        raise SettingsError(f"{name}={raw!r}: {error}") from None
    if value <= 0:
        raise SettingsError(f"{name}={raw!r} must be longer than zero")
    return value


def _prometheus_url(value: str | None) -> str:
    """The autoscaler's Prometheus: an http(s) address with a host and no credentials (they would end up in logs)."""
    text = (value or "").strip()
    if not text:
        return ""
    parts = urllib.parse.urlsplit(text)
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.username or parts.password:
        raise SettingsError("ROVING_PROMETHEUS_URL: an http:// or https:// address of Prometheus with a host and no "
                            "user or password, e.g. http://127.0.0.1:9090")
    return text.rstrip("/")
