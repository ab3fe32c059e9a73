"""Process command lines that fail in one line: `UsageError` and the argparse parser that raises it.

argparse's own `error` prints the whole usage text and exits; the process entries (`roving agent`,
`roving federate`) instead print one `roving <name>: <reason>` line and exit 2 themselves.
"""

from __future__ import annotations

import argparse
from typing import NoReturn


class UsageError(Exception):
    """A bad command line; the message names the option and the reason."""


class UsageParser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(message)
