"""eventsourcing's own recorder test suites, run against the JetStream recorders on a real server.

The suites are imported as modules so that pytest collects only our subclasses of them.
"""

from __future__ import annotations

import itertools
import os
from uuid import uuid4

import pytest
from eventsourcing.persistence import InfrastructureFactory
from eventsourcing.tests import application as app_suites
from eventsourcing.tests import persistence as suites
from eventsourcing.utils import Environment

from adapters.jetstream import JetStreamFactory
from adapters.jetstream.connection import Connection
from adapters.jetstream.recorders import (
    JetStreamAggregateRecorder,
    JetStreamApplicationRecorder,
    JetStreamProcessRecorder,
    JetStreamTrackingRecorder,
)

_clusters = itertools.count()


class OnRealServer:
    """Each test gets a fresh cluster name, so a fresh stream: notification ids start at 1."""

    @pytest.fixture(autouse=True)
    def _server(self, nats_url: str) -> None:
        self.nats_url = nats_url

    def connection(self) -> Connection:
        connection = Connection(self.nats_url, f"t{next(_clusters)}-{uuid4().hex[:8]}")
        self.addCleanup(connection.close)
        return connection


class TestAggregateRecorder(OnRealServer, suites.AggregateRecorderTestCase):
    def create_recorder(self) -> JetStreamAggregateRecorder:
        return JetStreamAggregateRecorder(self.connection())


class TestApplicationRecorder(OnRealServer, suites.ApplicationRecorderTestCase):
    def create_recorder(self) -> JetStreamApplicationRecorder:
        return JetStreamApplicationRecorder(self.connection())

    def test_insert_subscribe(self) -> None:
        self.optional_test_insert_subscribe()


class TestNonInterleavingNotificationIds(OnRealServer, suites.NonInterleavingNotificationIDsBaseCase):
    def create_recorder(self) -> JetStreamApplicationRecorder:
        return JetStreamApplicationRecorder(self.connection())


class TestTrackingRecorder(OnRealServer, suites.TrackingRecorderTestCase):
    def create_recorder(self) -> JetStreamTrackingRecorder:
        return JetStreamTrackingRecorder(self.connection())


class TestProcessRecorder(OnRealServer, suites.ProcessRecorderTestCase):
    def create_recorder(self) -> JetStreamProcessRecorder:
        return JetStreamProcessRecorder(self.connection())


class CustomTrackingRecorder(JetStreamTrackingRecorder):
    pass


class TestInfrastructureFactory(OnRealServer, suites.InfrastructureFactoryTestCase[JetStreamFactory]):
    def setUp(self) -> None:
        self.env = Environment("TestCase", {
            InfrastructureFactory.PERSISTENCE_MODULE: "adapters.jetstream",
            "ROVING_NATS_URL": self.nats_url,
            "ROVING_CLUSTER": f"factory{next(_clusters)}",
        })
        super().setUp()

    def expected_factory_class(self) -> type[JetStreamFactory]:
        return JetStreamFactory

    def expected_aggregate_recorder_class(self) -> type[JetStreamAggregateRecorder]:
        return JetStreamAggregateRecorder

    def expected_application_recorder_class(self) -> type[JetStreamApplicationRecorder]:
        return JetStreamApplicationRecorder

    def expected_tracking_recorder_class(self) -> type[JetStreamTrackingRecorder]:
        return JetStreamTrackingRecorder

    def tracking_recorder_subclass(self) -> type[JetStreamTrackingRecorder]:
        return CustomTrackingRecorder

    def expected_process_recorder_class(self) -> type[JetStreamProcessRecorder]:
        return JetStreamProcessRecorder


class TestExampleApplication(OnRealServer, app_suites.ExampleApplicationTestCase):
    expected_factory_topic = "adapters.jetstream.factory:JetStreamFactory"

    def setUp(self) -> None:
        self.saved = {k: os.environ.get(k) for k in ("PERSISTENCE_MODULE", "ROVING_NATS_URL", "ROVING_CLUSTER")}
        os.environ["PERSISTENCE_MODULE"] = "adapters.jetstream"
        os.environ["ROVING_NATS_URL"] = self.nats_url
        os.environ["ROVING_CLUSTER"] = f"bank{next(_clusters)}"
        super().setUp()

    def tearDown(self) -> None:
        for key, value in self.saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        super().tearDown()
