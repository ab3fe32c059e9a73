"""A stopping agent lets go of its signals before its loop closes (a late TERM was written to a closed pipe)."""

from __future__ import annotations

import asyncio
import signal

from api.agent.agent import DETACH
from api.agent.main import stop_listening


def test_a_stopping_agent_ignores_late_signals_and_leaves_no_wakeup_fd():
    saved = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT, DETACH)}
    loop = asyncio.new_event_loop()
    try:
        for signum in saved:
            loop.add_signal_handler(signum, lambda: None)
        stop_listening(loop)
        assert signal.set_wakeup_fd(-1) == -1  # none left pointing at the loop's pipe
        assert all(signal.getsignal(s) is signal.SIG_IGN for s in saved)
        signal.raise_signal(signal.SIGTERM)  # a late TERM: ignored, nothing written anywhere
    finally:
        loop.close()
        for signum, handler in saved.items():
            signal.signal(signum, handler)
