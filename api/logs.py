"""Structured logs: key-value events with ids bound; JSON for machines, readable lines in a terminal."""

from __future__ import annotations

import logging
import sys

import structlog


def configure_logging(log_format: str = "", level: int = logging.INFO) -> None:
    """`json` or `console`; without a choice, a terminal gets console lines and anything else JSON."""
    console = log_format == "console" or (not log_format and sys.stderr.isatty())
    renderer = structlog.dev.ConsoleRenderer() if console else structlog.processors.JSONRenderer()
    structlog.configure(
        processors=[structlog.contextvars.merge_contextvars, structlog.processors.add_log_level,
                    structlog.processors.TimeStamper(fmt="iso", utc=True), renderer],
        wrapper_class=structlog.make_filtering_bound_logger(level),
        logger_factory=lambda *_: StderrLogger(),
        cache_logger_on_first_use=True,
    )


class StderrLogger:
    """Writes to whatever sys.stderr is when a line is logged (test runners swap it)."""

    def msg(self, message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    log = debug = info = warning = warn = error = critical = exception = fatal = msg
