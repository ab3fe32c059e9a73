"""Fixtures shared by every test layer."""

from __future__ import annotations

import sys

import pytest
import structlog
from structlog._config import BoundLoggerLazyProxy

OUR_MODULES = ("api.", "adapters.", "projections.", "domain.", "ops.")


@pytest.fixture(autouse=True)
def _structlog_as_it_was():
    """A test that runs a process's main in-process (`agent_main`, the CLI) configures structlog for good, with
    loggers cached on first use: every later test's `capture_logs()` then misses those loggers. After each test the
    configuration is put back and our modules' loggers forget what they cached."""
    config = structlog.get_config()
    yield
    structlog.configure(**config)
    for name, module in list(sys.modules.items()):
        if name.startswith(OUR_MODULES):
            for value in list(vars(module).values()):
                if isinstance(value, BoundLoggerLazyProxy):
                    value.__dict__.pop("bind", None)


# The suite runs on xdist workers file by file, in the order files are collected. Long files collected last made
# the run's tail: the two soaks (about 170 s and 150 s) began six minutes in and ran alone at the end. Long layers
# go first; the many short unit files then fill the gaps. (`make test` passes --no-loadscope-reorder: by default
# xdist orders files by their number of tests, which put every one-test soak last.)
LONG_FIRST = ("tests/soak/", "tests/integration/test_log_under_failure.py", "tests/e2e/test_docs.py",
              "tests/e2e/test_wheel.py", "tests/e2e/", "tests/browser/", "tests/integration/")


def _rank(item: pytest.Item) -> int:
    path = item.nodeid.split("::", 1)[0]
    return next((rank for rank, prefix in enumerate(LONG_FIRST) if path.startswith(prefix)), len(LONG_FIRST))


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    items.sort(key=_rank)  # stable: a file's tests keep their order, and every worker sorts alike
