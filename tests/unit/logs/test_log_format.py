"""JSON logs carry a failure's traceback as text, and standard-library loggers (uvicorn, nats) come out the same way;
console logs print a traceback without the frames' local variables (they hold tokens and secret values)."""

import json
import logging

import pytest
import structlog

from api.logs import StderrHandler, configure_logging


@pytest.fixture
def json_logs():
    yield from configured("json")


@pytest.fixture
def console_logs():
    yield from configured("console")


def configured(log_format: str):
    config, root = structlog.get_config(), logging.getLogger()
    handlers, level = list(root.handlers), root.level
    uvicorn = logging.getLogger("uvicorn.access")
    uvicorn_state = (list(uvicorn.handlers), uvicorn.propagate)
    configure_logging(log_format, logging.INFO)
    # a logger used under a caching configuration keeps it for good: every later test's capture_logs() would miss it
    structlog.configure(cache_logger_on_first_use=False)
    yield
    structlog.configure(**config)
    for handler in [h for h in root.handlers if isinstance(h, StderrHandler)]:
        root.removeHandler(handler)
    root.handlers[:] = handlers
    root.setLevel(level)
    uvicorn.handlers[:], uvicorn.propagate = uvicorn_state


def lines(capsys) -> list[dict]:
    return [json.loads(line) for line in capsys.readouterr().err.splitlines() if line.startswith("{")]


def test_a_json_log_of_an_exception_carries_its_traceback_text(json_logs, capsys):
    try:
        raise ZeroDivisionError("division by zero")
    except ZeroDivisionError:
        structlog.get_logger("roving.test").exception("pass.failed", node="n1")
    [line] = lines(capsys)
    assert (line["event"], line["node"], line["level"]) == ("pass.failed", "n1", "error")
    assert "exc_info" not in line
    assert line["exception"].startswith("Traceback") and "ZeroDivisionError: division by zero" in line["exception"]


def test_stdlib_loggers_come_out_as_structlog_json(json_logs, capsys):
    logging.getLogger("uvicorn.access").info("GET %s %d", "/healthz", 200)
    try:
        raise ConnectionResetError("nats went away")
    except ConnectionResetError:
        logging.getLogger("nats.aio.client").exception("reconnecting")
    access, nats = lines(capsys)
    assert (access["event"], access["logger"], access["level"]) == ("GET /healthz 200", "uvicorn.access", "info")
    assert "timestamp" in access
    assert (nats["event"], nats["logger"]) == ("reconnecting", "nats.aio.client")
    assert "ConnectionResetError: nats went away" in nats["exception"] and "exc_info" not in nats


def test_a_console_traceback_names_the_failure_but_not_the_locals_of_its_frames(console_logs, capsys):
    def failing(token: str) -> None:
        views = {"workflow": "w" * 10_000}  # what a request's frames hold: credentials, whole read models
        raise PermissionError(f"refused after {len(views)} lookups")

    secret = "-".join(["s3cr3t", "token", "value"])  # built, so the source line printed does not hold it
    try:
        failing(secret)
    except PermissionError:
        logging.getLogger("uvicorn.error").exception("Exception in ASGI application")
    err = capsys.readouterr().err
    assert "Exception in ASGI application" in err and "PermissionError: refused after 1 lookups" in err
    assert 'in failing' in err  # the frame is named, with its line
    assert secret not in err and "w" * 100 not in err
