"""Make the files the shipped nats-server configs include: per-role users and a CA with a server certificate.

    python ops/nats/make_site.py /etc/roving/nats --cluster c1 --host nats1.example.internal --host 10.0.0.1

writes, readable by their owner only: `credentials/{control,agent,federation,reader}.creds` (give
`control.creds` to the control plane as ROVING_NATS_CREDS, `agent.creds` as ROVING_NATS_AGENT_CREDS),
`users.conf` (the `authorization` block the configs include), `leaf.conf` (the hub's leafnode user),
`store.key` (the store encryption key; keep a copy apart: without it the store cannot be read) and, in
`tls/`, `ca.pem` (ROVING_NATS_TLS_CA on every client, agents included), `server.pem` and `server-key.pem`.
With `--client NAME` (a hub, once per member) it also signs `tls/NAME.pem` and `tls/NAME-key.pem`, the
certificate that member presents on its leaf connection (give it those two files and `tls/ca.pem`).
Run it once and copy the directory to every node of a cluster: they must share users, CA and key.
Existing files are kept, so running it again changes nothing.
"""

from __future__ import annotations

import argparse
import secrets
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from adapters.nats_auth import NatsAuth, write_secret  # noqa: E402 - after the path is set
from adapters.nats_tls import LOCAL_HOSTS, client_certificate, local_ca  # noqa: E402


def make_site(directory: Path, clusters: list[str], hosts: list[str], clients: list[str] = ()) -> None:
    auth = NatsAuth(directory / "credentials", clusters).load_or_create()
    write_secret(directory / "users.conf", auth.authorization() + "\n")
    write_secret(directory / "leaf.conf", auth.leaf_authorization() + "\n")
    if not (directory / "store.key").exists():
        write_secret(directory / "store.key", f'ROVING_STORE_KEY: "{secrets.token_hex(32)}"\n')
    local_ca(directory / "tls", tuple(hosts) or LOCAL_HOSTS)
    for name in clients:
        client_certificate(directory / "tls", name)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("directory", type=Path)
    parser.add_argument("--cluster", action="append", default=[], help="Roving cluster agents may log for")
    parser.add_argument("--host", action="append", default=[], help="a name or IP clients use for the server")
    parser.add_argument("--client", action="append", default=[], help="sign a client certificate for NAME")
    args = parser.parse_args(argv)
    make_site(args.directory, args.cluster, args.host, args.client)
    print(f"wrote {args.directory}: give clients {args.directory / 'tls' / 'ca.pem'} and their role's .creds")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
