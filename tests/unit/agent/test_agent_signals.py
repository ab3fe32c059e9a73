"""A stopping agent lets go of its signals before its loop closes (a late TERM was written to a closed pipe)."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
import time

from adapters.log_spool import Meta, Spool
from api.agent import logstream
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


class _Stuck:
    """A log connection whose server went with a killed `roving up`: nothing it is asked ever answers."""

    async def close(self) -> None:
        await asyncio.Event().wait()


def test_a_stopping_agent_gives_a_log_stream_that_does_not_answer_a_bounded_wait(tmp_path):
    warnings: list[str] = []

    class Log:
        def warning(self, event: str, **_: object) -> None:
            warnings.append(event)

    async def main() -> None:
        shipping = logstream.LogShipping(Spool(tmp_path / "spool"), lambda: "node", Log())
        shipping.spool.output("a.1", Meta("wf", "train"), "stdout", b"never taken")
        shipping.shipper, shipping.nc = _Stuck(), _Stuck()  # type: ignore[assignment]
        await shipping.close(0.2)

    began = time.monotonic()
    asyncio.run(main())
    assert time.monotonic() - began < 2
    assert warnings == ["agent.log_flush_slow", "agent.log_stream_close_failed"]
    assert (tmp_path / "spool" / "a.1" / "data").stat().st_size > 0, "what was not taken waits for the next agent"


def test_an_agent_whose_stop_hangs_is_gone_at_the_latest_when_its_bound_runs_out():
    script = "import time; from api.agent.main import exit_at_the_latest; exit_at_the_latest(0.3); time.sleep(30)"
    began = time.monotonic()
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=20)
    assert done.returncode == 1 and "still stopping" in done.stderr and time.monotonic() - began < 10
