"""Structured logs: key-value events with ids bound; JSON for machines, readable lines in a terminal.

structlog's own loggers and the standard library's (uvicorn, nats, asyncio) end in the same renderer: the
latter through a root handler with structlog's ProcessorFormatter. JSON lines carry a failure's traceback as
text under `exception`, never a bare `"exc_info": true`.
"""

from __future__ import annotations

import logging
import sys
from typing import Any

import structlog

# uvicorn installs handlers of its own on these (and stops them propagating) unless told `log_config=None`.
STDLIB_OWN_HANDLERS = ("uvicorn", "uvicorn.error", "uvicorn.access")


def configure_logging(log_format: str = "", level: int = logging.INFO) -> None:
    """`json` or `console`; without a choice, a terminal gets console lines and anything else JSON."""
    console = log_format == "console" or (not log_format and sys.stderr.isatty())
    # plain tracebacks: structlog's default (rich, when installed) prints every frame's locals, which puts tokens and
    # secret values in the log and took a stopping `roving up` over 30 s of CPU to render one request's failure
    renderer: Any = (structlog.dev.ConsoleRenderer(exception_formatter=structlog.dev.plain_traceback) if console
                     else structlog.processors.JSONRenderer())
    # ConsoleRenderer prints exc_info itself (and warns when format_exc_info ran first); JSON needs the text
    tracebacks = [] if console else [structlog.processors.format_exc_info]
    structlog.configure(
        processors=[*shared_processors(), *tracebacks, renderer],
        wrapper_class=structlog.make_filtering_bound_logger(level),
        logger_factory=lambda *_: StderrLogger(),
        cache_logger_on_first_use=True,
    )
    route_stdlib_logging(renderer, tracebacks, level)


def shared_processors() -> list[Any]:
    return [structlog.contextvars.merge_contextvars, structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True)]


def route_stdlib_logging(renderer: Any, tracebacks: list[Any], level: int) -> None:
    """One root handler renders every standard-library record as structlog renders its own events."""
    formatter = structlog.stdlib.ProcessorFormatter(
        foreign_pre_chain=[*shared_processors(), structlog.stdlib.add_logger_name, structlog.stdlib.ExtraAdder()],
        processors=[structlog.stdlib.ProcessorFormatter.remove_processors_meta, *tracebacks, renderer],
    )
    root = logging.getLogger()
    for handler in [h for h in root.handlers if isinstance(h, StderrHandler)]:
        root.removeHandler(handler)
    handler = StderrHandler()
    handler.setFormatter(formatter)
    root.addHandler(handler)
    root.setLevel(level)
    for name in STDLIB_OWN_HANDLERS:
        logger = logging.getLogger(name)
        logger.handlers.clear()
        logger.propagate = True
        logger.setLevel(logging.NOTSET)  # the root's level decides (a uvicorn.Config may have set its own since)


class StderrLogger:
    """Writes to whatever sys.stderr is when a line is logged (test runners swap it)."""

    def msg(self, message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    log = debug = info = warning = warn = error = critical = exception = fatal = msg


class StderrHandler(logging.StreamHandler):
    """A stream handler on whatever sys.stderr is at the time of each record, as StderrLogger."""

    def __init__(self) -> None:
        super().__init__(sys.stderr)

    @property
    def stream(self) -> Any:
        return sys.stderr

    @stream.setter
    def stream(self, value: Any) -> None:
        pass  # the stream is always the current sys.stderr
