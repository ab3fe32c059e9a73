"""Who may use the log: per-role NATS users, the subjects each may touch, and client URLs that carry them.

`roving up` keeps one password per role in `<store>/credentials/<role>.creds` (mode 0600) and writes an
`authorization` block that refuses anonymous clients. The control plane may do anything; an agent may only append
job output (`roving_logs.<cluster>.>`), look up its log stream, use the built-images object store and speak the
agent bus (hear its node's work, send its reports: sealed per node, adapters/agent_bus.py), so it can never publish
an event (`roving.<cluster>.>`) or touch the JetStream API that writes one; a reader may only read;
federation may only keep the hub's `ROVING_FEDERATED` stream and ask members' domains about their streams (and is
the hub's leaf credential). Everyone but the control plane receives replies on `_INBOX.>` only: the control plane
uses its own inbox prefix, so no agent can read the control plane's replies or forge them.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote, urlsplit, urlunsplit

from adapters.nats_tls import with_tls
from adapters.private_files import create_private, write_private

ROLES = ("control", "agent", "federation", "reader")
CONTROL_INBOX = "_ROVING_CONTROL"  # the control plane's reply subjects; no other role may subscribe to them
REPLIES = "_INBOX.>"
FEDERATED_STREAM = "ROVING_FEDERATED"
# built images (adapters.object_cache): an agent writes chunks and names, reads them back through an ordered
# consumer it makes and drops, and may not delete, purge or reconfigure the bucket
IMAGE_STORE = ["$O.ROVING_IMAGES.>", "$JS.API.STREAM.INFO.OBJ_ROVING_IMAGES",
               "$JS.API.STREAM.MSG.GET.OBJ_ROVING_IMAGES", "$JS.API.CONSUMER.CREATE.OBJ_ROVING_IMAGES",
               "$JS.API.CONSUMER.CREATE.OBJ_ROVING_IMAGES.>", "$JS.API.CONSUMER.DELETE.OBJ_ROVING_IMAGES.>",
               "$JS.FC.OBJ_ROVING_IMAGES.>"]


class CredentialsError(ValueError):
    """A credentials file that cannot be read; the message names the file and the format it wants."""


@dataclass(frozen=True)
class Credentials:
    user: str
    password: str

    def url(self, url: str) -> str:
        """`url` (one or a comma-separated list) with these credentials in every server's address."""
        return ",".join(_with_userinfo(one, f"{quote(self.user, safe='')}:{quote(self.password, safe='')}")
                        for one in _split(url))

    def text(self) -> str:
        return f"user: {self.user}\npassword: {self.password}\n"


def _split(url: str) -> list[str]:
    return [one.strip() for one in url.split(",") if one.strip()]


def _with_userinfo(url: str, userinfo: str) -> str:
    parts = urlsplit(url if "://" in url else f"nats://{url}")
    host = parts.netloc.rpartition("@")[2]
    return urlunsplit(parts._replace(netloc=f"{userinfo}@{host}" if userinfo else host))


def without_credentials(url: str) -> str:
    """The same servers with no user or password: what may be logged or shown."""
    return ",".join(_with_userinfo(one, "") for one in _split(url))


def credentials_in(url: str) -> Credentials | None:
    """The user and password the first server of `url` carries, if any."""
    first = urlsplit(_split(url)[0]) if _split(url) else None
    if first is None or first.username is None:
        return None
    return Credentials(unquote(first.username), unquote(first.password or ""))


def read_credentials(path: Path) -> Credentials:
    """A creds file of ours: `user: NAME` and `password: SECRET` lines (a NATS JWT .creds needs nkeys,
    which is not installed: give a user and password instead)."""
    try:
        text = Path(path).read_text()
    except OSError as error:
        raise CredentialsError(f"cannot read NATS credentials {path}: {error.strerror or error}") from None
    if "BEGIN NATS USER JWT" in text:
        raise CredentialsError(f"{path} is a NATS JWT .creds file: Roving takes a user file "
                               "(`user: NAME` and `password: SECRET` lines)")
    fields = dict(line.split(":", 1) for line in text.splitlines() if ":" in line)
    fields = {key.strip(): value.strip() for key, value in fields.items()}
    if not fields.get("user") or not fields.get("password"):
        raise CredentialsError(f"{path} must hold `user: NAME` and `password: SECRET` lines")
    return Credentials(fields["user"], fields["password"])


def write_secret(path: Path, text: str) -> None:
    """A file only its owner may read (0600), replaced atomically; its directory is made 0700."""
    write_private(path, text, dir_mode=0o700)


def stream_token(cluster: str) -> str:
    return cluster.upper().replace("-", "_")


def permissions(role: str, clusters: Iterable[str] = ()) -> dict | None:
    """What `role` may publish and subscribe to (None: everything); no clusters named means any cluster."""
    names = list(clusters) or ["*"]
    streams = [f"LOGS_{stream_token(c)}" if c != "*" else "*" for c in names]
    if role == "control":
        return None
    if role == "agent":  # the agent bus (adapters/agent_bus.py): every node's subject, each message sealed for one
        return {"publish": [f"roving_logs.{c}.>" for c in names] + [f"$JS.API.STREAM.INFO.{s}" for s in streams]
                + IMAGE_STORE + [f"roving_agents.{c}.reports.*" for c in names],
                "subscribe": [REPLIES] + [f"roving_agents.{c}.node.*" for c in names]}
    if role == "reader":
        return {"publish": ["$JS.API.INFO", "$JS.API.STREAM.NAMES", "$JS.API.STREAM.INFO.*",
                            "$JS.API.DIRECT.GET.*", "$JS.API.DIRECT.GET.*.>"],
                "subscribe": [REPLIES] + [f"roving.{c}.>" for c in names] + [f"roving_logs.{c}.>" for c in names]}
    if role == "federation":
        kept = [f"$JS.API.STREAM.{verb}.{FEDERATED_STREAM}" for verb in ("INFO", "CREATE", "UPDATE")]
        return {"publish": ["$JS.API.INFO", *kept, f"$JS.API.DIRECT.GET.{FEDERATED_STREAM}",
                            f"$JS.API.DIRECT.GET.{FEDERATED_STREAM}.>", "$JS.*.API.STREAM.INFO.*"],
                "subscribe": [REPLIES]}
    raise ValueError(f"unknown NATS role {role!r}: one of {', '.join(ROLES)}")


class NatsAuth:
    """The credentials of one server's roles, made once and kept in `directory`; the config that needs them."""

    def __init__(self, directory: Path, clusters: Iterable[str] = ()) -> None:
        self.directory = Path(directory)
        self.clusters = tuple(clusters)
        self.users: dict[str, Credentials] = {}

    def load_or_create(self) -> NatsAuth:
        for role in ROLES:
            path = self.path(role)
            create_private(path, Credentials(f"roving-{role}", secrets.token_urlsafe(24)).text(), dir_mode=0o700)
            self.users[role] = read_credentials(path)
        return self

    def path(self, role: str) -> Path:
        return self.directory / f"{role}.creds"

    def __getitem__(self, role: str) -> Credentials:
        if not self.users:
            self.load_or_create()
        return self.users[role]

    def authorization(self) -> str:
        """nats-server's `authorization` block: these users only, each with its role's permissions."""
        entries = []
        for role in ROLES:
            user: dict[str, Any] = {"user": self[role].user, "password": self[role].password}
            allowed = permissions(role, self.clusters)
            if allowed is not None:
                user["permissions"] = {"publish": {"allow": allowed["publish"]},
                                       "subscribe": {"allow": allowed["subscribe"]}}
            entries.append(json.dumps(user))
        return "authorization { users: [\n  " + ",\n  ".join(entries) + "\n] }"

    def leaf_authorization(self) -> str:
        """The leafnodes listener's own block: a member joins the hub with the federation credentials."""
        leaf = self["federation"]
        return f"authorization {{ user: {json.dumps(leaf.user)}, password: {json.dumps(leaf.password)} }}"


def agent_url(url: str | None, agent: Credentials | None) -> str | None:
    """The log URL to hand an agent: its own credentials in place of the control plane's, never the control
    plane's (with no agent credentials it gets none, and the server refuses it); a server that asks for no
    credentials gets the URL as it is."""
    if not url or credentials_in(url) is None:
        return url
    return agent.url(url) if agent else without_credentials(url)


def agent_log_url(url: str | None, data_dir: Path, agent_creds: Path | None = None) -> str | None:
    """`agent_url` with the agent credentials of a site's own (`ROVING_NATS_AGENT_CREDS`), else those
    `roving up` made in the data dir."""
    if agent_creds is None:
        return agent_url(url, role_credentials(Path(data_dir) / "nats", "agent"))
    try:
        agent = read_credentials(agent_creds)
    except CredentialsError:
        agent = None
    return agent_url(url, agent)


def role_credentials(store: Path, role: str) -> Credentials | None:
    """The credentials `roving up`'s embedded server keeps for `role` in its store, if it keeps any."""
    try:
        return read_credentials(Path(store) / "credentials" / f"{role}.creds")
    except CredentialsError:
        return None


def role_url(address: str, store: Path, role: str, tls: bool | None = None, secure: bool = True) -> str:
    """How `role` reaches the embedded server whose store is `store`: `address` with the role's credentials (unless
    the server is not `secure`) and, when the server speaks TLS (`tls`; None: when the store has a CA), its CA. The
    one builder of a role's URL (the server itself, the soak, the benches)."""
    ca = Path(store) / "tls" / "ca.pem"
    url = with_tls(address, ca) if (ca.exists() if tls is None else tls) else address
    credentials = role_credentials(store, role) if secure else None
    return credentials.url(url) if credentials is not None else url
