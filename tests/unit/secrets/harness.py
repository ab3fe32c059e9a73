"""The in-process API (tests.unit.api.harness) with the secret routes and store wired as the wiring note says."""

from __future__ import annotations

import argparse
from pathlib import Path

from adapters.secret_store import open_secret_store
from api.cli import secret as secret_cli
from api.cli.main import common_options
from api.http.routes import secrets as secret_routes
from tests.unit.api.harness import Api


def secrets_api(data_dir: Path) -> Api:
    api = Api()
    api.services.secrets = open_secret_store(api.services.roving, data_dir)
    api.app.router.routes[:0] = secret_routes.routes
    return api


def secret_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="roving")
    commands = parser.add_subparsers(dest="command", required=True)
    secret_cli.register(commands, common_options())
    return parser
