"""The eventsourcing infrastructure factory for JetStream (`PERSISTENCE_MODULE=adapters.jetstream`)."""

from __future__ import annotations

from eventsourcing.persistence import (
    AggregateRecorder,
    ApplicationRecorder,
    InfrastructureFactory,
    InfrastructureFactoryError,
    ProcessRecorder,
    Transcoder,
)
from eventsourcing.utils import Environment, EnvType, resolve_topic

from adapters.jetstream.connection import Connection
from adapters.jetstream.recorders import (
    JetStreamAggregateRecorder,
    JetStreamApplicationRecorder,
    JetStreamProcessRecorder,
    JetStreamTrackingRecorder,
)
from adapters.jetstream.subjects import check_cluster_name
from adapters.transcoder import MsgspecTranscoder


class JetStreamFactory(InfrastructureFactory[JetStreamTrackingRecorder]):
    """Reads ROVING_NATS_URL, ROVING_CLUSTER (default `local`) and ROVING_NATS_REPLICAS (default 1)."""

    NATS_URL = "ROVING_NATS_URL"
    CLUSTER = "ROVING_CLUSTER"
    REPLICAS = "ROVING_NATS_REPLICAS"
    RETRY_FOR = "ROVING_NATS_RETRY_SECONDS"

    def __init__(self, env: Environment | EnvType | None) -> None:
        super().__init__(env)
        url = self.env.get(self.NATS_URL)
        if not url:
            raise InfrastructureFactoryError(
                "ROVING_NATS_URL is not set: point it at a nats-server with JetStream (`roving up` starts one)"
            )
        self.connection = Connection(
            url,
            check_cluster_name(self.env.get(self.CLUSTER) or "local"),
            replicas=int(self.env.get(self.REPLICAS) or 1),
            retry_for=float(self.env.get(self.RETRY_FOR) or 60),
        )

    def transcoder(self) -> Transcoder:
        topic = self.env.get(self.TRANSCODER_TOPIC)
        return resolve_topic(topic)() if topic else MsgspecTranscoder()

    def aggregate_recorder(self, purpose: str = "events") -> AggregateRecorder:
        return JetStreamAggregateRecorder(self.connection, "snapshots" if purpose == "snapshots" else "events")

    def application_recorder(self) -> ApplicationRecorder:
        return self._topic_or(self.APPLICATION_RECORDER_TOPIC, JetStreamApplicationRecorder)

    def tracking_recorder(
        self, tracking_recorder_class: type[JetStreamTrackingRecorder] | None = None
    ) -> JetStreamTrackingRecorder:
        if tracking_recorder_class is None:
            topic = self.env.get(self.TRACKING_RECORDER_TOPIC)
            tracking_recorder_class = resolve_topic(topic) if topic else JetStreamTrackingRecorder
        if not issubclass(tracking_recorder_class, JetStreamTrackingRecorder):
            raise InfrastructureFactoryError(f"{tracking_recorder_class} is not a JetStreamTrackingRecorder")
        return tracking_recorder_class(self.connection)

    def process_recorder(self) -> ProcessRecorder:
        return self._topic_or(self.PROCESS_RECORDER_TOPIC, JetStreamProcessRecorder)

    def _topic_or(self, key: str, default: type):
        topic = self.env.get(key)
        return (resolve_topic(topic) if topic else default)(self.connection)

    def close(self) -> None:
        self.connection.close()
