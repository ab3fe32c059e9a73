"""A real nats-server per test module, on a free loopback port in a temporary directory."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from adapters.nats_server import NatsServer


@pytest.fixture(scope="module")
def nats_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NatsServer]:
    server = NatsServer(tmp_path_factory.mktemp("nats")).start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def nats_url(nats_server: NatsServer) -> str:
    return nats_server.url
