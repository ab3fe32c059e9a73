"""JSON logs carry a failure's traceback as text, and standard-library loggers (uvicorn, nats) come out the same way."""

import json
import logging

import pytest
import structlog

from api.logs import StderrHandler, configure_logging


@pytest.fixture
def json_logs():
    config, root = structlog.get_config(), logging.getLogger()
    handlers, level = list(root.handlers), root.level
    uvicorn = logging.getLogger("uvicorn.access")
    uvicorn_state = (list(uvicorn.handlers), uvicorn.propagate)
    configure_logging("json", logging.INFO)
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
