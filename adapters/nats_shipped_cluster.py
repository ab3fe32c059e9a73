"""The shipped secure R3 layout on loopback: three nats-servers run from ops/nats/cluster-node1.conf and the files
ops/nats/make_site.py writes (per-role users, a CA and server certificate, a store key), for the benches and tests
that must measure or prove what a site runs rather than LocalCluster's bare servers.

Only what loopback needs is rewritten: each node's name, client and route ports (127.0.0.1, free ports), store
directory and the paths of the site's files; every rewrite must match the shipped text once, so a changed config
fails here instead of silently running another layout. Client connections need a user and TLS, routes TLS both
ways (the CA-signed server certificate, `verify: true`), and the store is encrypted (`cipher: chachapoly`).
`env` is what the admin guide tells an admin to give Roving for such a cluster."""

from __future__ import annotations

import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from adapters.nats_auth import role_url
from adapters.nats_cluster import LocalCluster
from adapters.nats_server import NatsServer, free_port, free_ports

SHIPPED = Path(__file__).resolve().parents[1] / "ops" / "nats"
NODE_CONFIG = SHIPPED / "cluster-node1.conf"
HOSTS = ("127.0.0.1", "localhost")


class ShippedConfigChanged(RuntimeError):
    """cluster-node1.conf no longer has a line this loopback rewrite expects; the message names it."""


@dataclass
class ShippedNode(NatsServer):
    """One node run from the shipped config as rewritten for it, kept in the site directory: nats-server resolves
    the config's includes (store.key, users.conf) beside the config file itself."""

    site: Path = Path()
    shipped_text: str = ""

    def config_text(self) -> str:
        return self.shipped_text

    @property
    def config_path(self) -> Path:
        return (self.site / f"{self.name}.conf").resolve()

    def url_for(self, role: str) -> str:
        """The client URL with `role`'s credentials from the site, trusting the site's CA."""
        return role_url(self.address, self.site, role, tls=True)


class ShippedCluster(LocalCluster):
    """`size` nodes of the shipped layout sharing one site (users, CA, store key), as make_site.py's docstring says
    a site's nodes must; `url` names them all (no credentials), `env` is Roving's settings for them."""

    def __init__(self, root: Path, size: int = 3, clusters: tuple[str, ...] = ("local",)) -> None:
        self.site = root / "site"
        make_site(self.site, clusters)
        ports = free_ports(2 * size)  # route ports, one a node, and client ports: all different
        self.routes = ports[:size]
        self.servers = [shipped_node(root / f"n{i}", self.site, i, self.routes, ports[size + i]) for i in range(size)]

    @property
    def env(self) -> dict[str, str]:
        """ROVING_NATS_URL (all servers), the control plane's and the agents' user files, the CA, R3: the admin
        guide's words for a site's cluster."""
        return {"ROVING_NATS_URL": self.url, "ROVING_NATS_REPLICAS": str(min(len(self.servers), 3)),
                "ROVING_NATS_CREDS": str(self.site / "credentials" / "control.creds"),
                "ROVING_NATS_AGENT_CREDS": str(self.site / "credentials" / "agent.creds"),
                "ROVING_NATS_TLS_CA": str(self.site / "tls" / "ca.pem")}

    def url_for(self, role: str) -> str:
        """Every server, with `role`'s credentials and the site's CA: how a tool reaches the cluster as `role`."""
        return role_url(self.url, self.site, role, tls=True)


def shipped_node(store: Path, site: Path, index: int, routes: list[int], port: int = 0) -> ShippedNode:
    """Node `index` of a cluster whose route ports are `routes` (its own at `index`), on client port `port` (0: a
    free one)."""
    port = port or free_port()
    text = node_config(NODE_CONFIG.read_text(), site, store / "jetstream", index, port, routes)
    return ShippedNode(store, port=port, name=f"roving-n{index + 1}", secure=False, site=site, shipped_text=text)


def make_site(site: Path, clusters: tuple[str, ...]) -> None:
    """The shipped script itself, run as an admin runs it, for loopback's names."""
    hosts = [arg for host in HOSTS for arg in ("--host", host)]
    names = [arg for cluster in clusters for arg in ("--cluster", cluster)]
    done = subprocess.run([sys.executable, str(SHIPPED / "make_site.py"), str(site), *names, *hosts],
                          capture_output=True, text=True)
    if done.returncode:
        raise RuntimeError(f"make_site.py exited {done.returncode}: {done.stderr.strip()[-500:]}")


def node_config(shipped: str, site: Path, store: Path, index: int, port: int, routes: list[int]) -> str:
    """cluster-node1.conf for node `index` on loopback: as an admin copies it for nodes 2 and 3, with ports."""
    text = once(shipped, 'server_name: "roving-n1"', f'server_name: "roving-n{index + 1}"')
    text = once(text, 'listen: "0.0.0.0:4222"', f'listen: "127.0.0.1:{port}"')
    text = once(text, 'listen: "0.0.0.0:6222"', f'listen: "127.0.0.1:{routes[index]}"')
    text = once(text, 'store_dir: "/var/lib/roving/nats"', f'store_dir: "{store}"')
    peers = ", ".join(f'"nats-route://127.0.0.1:{route}"' for route in routes)
    text, found = re.subn(r"routes: \[[^\]]*\]", f"routes: [{peers}]", text)
    if found != 1:
        raise ShippedConfigChanged(f"{NODE_CONFIG}: expected one `routes: [...]`, found {found}")
    return text.replace("/etc/roving/nats", str(site))


def once(text: str, old: str, new: str) -> str:
    if text.count(old) != 1:
        raise ShippedConfigChanged(f"{NODE_CONFIG}: expected `{old}` once, found it {text.count(old)} times")
    return text.replace(old, new)
