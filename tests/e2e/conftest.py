"""One README stack per e2e module."""

from __future__ import annotations

import pytest

from tests.e2e.stack import LocalStack


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory):
    running = LocalStack(tmp_path_factory.mktemp("roving")).start()
    yield running
    running.stop()
