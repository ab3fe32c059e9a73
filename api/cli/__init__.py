"""The `roving` command line: talks to the HTTP API only (the `roving` console script is `api.cli:main`)."""

from api.cli.main import main

__all__ = ["main"]
