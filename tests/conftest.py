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
