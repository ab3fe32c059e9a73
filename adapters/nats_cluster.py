"""A JetStream cluster of nats-servers on loopback (three by default), for the tests and the soak that lose a server:
start them together, kill -9 one, start it again on its port and store.

Bare servers (no users, no TLS, no encryption): what is under test is replication, not the site's security, which
the shipped configs' own tests cover (tests/integration/test_shipped_nats_configs.py)."""

from __future__ import annotations

import threading
from pathlib import Path

from adapters.nats_server import ClusterSpec, NatsServer, free_ports


class LocalCluster:
    """`size` servers routed to each other; `url` names them all, as ROVING_NATS_URL does for a site."""

    def __init__(self, root: Path, size: int = 3, name: str = "roving-ha") -> None:
        # client ports chosen now, with the routes (all different): `url` is known before the servers start
        ports = free_ports(2 * size)
        routes, clients = ports[:size], ports[size:]
        self.servers = [NatsServer(root / f"n{i}", port=clients[i], name=f"n{i}",
                                   cluster=ClusterSpec(name, routes[i], routes), secure=False) for i in range(size)]

    @property
    def url(self) -> str:
        return ",".join(server.address for server in self.servers)

    def start(self, timeout: float = 30.0) -> LocalCluster:
        """All at once: a server waits for its peers before it says it is ready."""
        failures: list[BaseException] = []

        def start(server: NatsServer) -> None:
            try:
                server.start(timeout=timeout)
            except BaseException as error:  # noqa: BLE001 - raised below, in the caller's thread
                failures.append(error)

        threads = [threading.Thread(target=start, args=(s,), daemon=True) for s in self.servers]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        if failures:
            self.stop()
            raise failures[0]
        return self

    def kill(self, index: int) -> None:
        """SIGKILL one server: a crash, its store left as it was."""
        self.servers[index].kill()

    def restart(self, index: int, timeout: float = 30.0) -> None:
        """The killed server again, on its port and store; it catches up from its peers."""
        self.servers[index].start(timeout=timeout)

    def stop(self) -> None:
        for server in self.servers:
            server.stop()
