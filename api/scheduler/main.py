"""`roving scheduler`: a standby-capable scheduler process against ROVING_NATS_URL (no HTTP, no audit).

The process entry lives apart from api/scheduler/runner.py so the runner stays only the runner: the entry needs the
composition root (api/composition/stack.py), and the composition root needs the runner.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading

DESCRIPTION = ("Run the scheduler against ROVING_NATS_URL. "
               "Several may run: one holds the leader lease, the others take over within its TTL.")


def scheduler_main(argv: list[str]) -> int:
    argparse.ArgumentParser(prog="roving scheduler", description=DESCRIPTION).parse_args(argv)
    # Imported here, as `roving up` does, so `roving scheduler --help` answers without loading the stack.
    from api.composition.settings import Settings, SettingsError
    from api.composition.stack import Stack

    try:
        settings = Settings.from_env()
    except SettingsError as error:
        print(f"roving: {error}", file=sys.stderr)
        return 2
    if not settings.nats_url:
        print("roving: set ROVING_NATS_URL to the cluster's NATS (roving up runs its own scheduler)", file=sys.stderr)
        return 2
    stopping = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stopping.set())
    signal.signal(signal.SIGINT, lambda *_: stopping.set())
    stack = Stack(settings, embedded_nats=False, audit=False, provisioners=False).start()  # no API: no providers
    try:
        stopping.wait()
    finally:
        stack.stop()
    return 0
