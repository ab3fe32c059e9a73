"""The JetStream persistence module for eventsourcing: set PERSISTENCE_MODULE=adapters.jetstream."""

from adapters.jetstream.factory import JetStreamFactory

__all__ = ["JetStreamFactory"]
