"""What the HTTP routes read through the control plane's own log connection: job output from the log stream, and
people's objects. Both run on the leases' connection and its loop; the routes call them from their own threads."""

from __future__ import annotations

from typing import TYPE_CHECKING

from adapters.jetstream.connection import Connection

if TYPE_CHECKING:
    from adapters.object_store import ObjectStore


class LogReader:
    """Synchronous reads of the job log stream for the HTTP routes, on the leases' connection loop."""

    def __init__(self, connection: Connection, cluster: str, max_age: float | None = None, max_bytes: int = 0) -> None:
        """`max_age` and `max_bytes`: the job log stream's limits (ROVING_JOB_LOG_MAX_AGE, _MAX_BYTES), applied to it."""
        from adapters.jetstream.replicas import hold_replicas
        from adapters.logs import Logs
        from adapters.object_cache import ensure_bucket

        self.connection = connection
        js, replicas = connection.client.js, connection.replicas
        self.logs = Logs(js, cluster) if max_age is None else Logs(js, cluster, max_age=max_age)
        connection.run(self.logs.ensure)
        if max_age is not None:
            connection.run(lambda: self.logs.hold_limits(max_bytes))
        # the job log takes the connection's replicas whoever made it (and however: Logs.ensure makes it as it likes)
        connection.run(lambda: hold_replicas(js, self.logs.stream, replicas))
        connection.run(lambda: ensure_bucket(js, replicas))  # built images: agents use it, never make it

    def read(self, workflow_id: str, stage: str) -> bytes:
        return self.connection.run(lambda: self.logs.read(workflow_id, stage))

    def read_range(self, workflow_id: str, stage: str, offset: int, limit: int | None) -> tuple[bytes, int]:
        """(bytes from `offset`, `limit` at most; the log's total so far)."""
        return self.connection.run(lambda: self.logs.read_range(workflow_id, stage, offset, limit))

    def follow(self, workflow_id: str, stage: str):
        """(stream, chunk) as the stage writes them, until its end, for a caller on another loop (the HTTP server's)."""
        from adapters.loop_bridge import pulled

        return pulled(self.connection.loop.loop, self.logs.follow_streams(workflow_id, stage))


def object_store(connection: Connection, cluster: str, max_bytes: int) -> ObjectStore:
    """People's objects (adapters.object_store), on the leases' connection and its loop."""
    from adapters.object_store import ObjectStore

    return ObjectStore(connection.client.js, cluster, max_bytes, loop=connection.loop.loop, replicas=connection.replicas)
