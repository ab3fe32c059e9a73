"""`roving agent`: the process that runs a node agent (api/agent/agent.Agent) and owns its resources."""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import sys
import threading

import httpx
from prometheus_client import start_http_server

from api.agent.agent import DETACH, Agent, log
from api.agent.args import AgentConfig, UsageError, check_tenancy, parse_args
from api.agent.metrics import NodeMetrics
from api.agent.node import build_executor

STOP_MARGIN = 4.0  # seconds past its jobs' kill grace a stopping agent may take to report and close its streams


async def run_agent(config: AgentConfig, stop: asyncio.Event, detach: asyncio.Event | None = None) -> None:
    """Own the agent's resources (HTTP client, metrics server) for as long as it runs. Stopping with `detach` set
    leaves the jobs running for the next agent on this work directory to adopt."""
    metrics = NodeMetrics(config.sys_root)
    server = start_http_server(config.metrics_port, registry=metrics.registry) if config.metrics_port else None
    headers = {"Authorization": f"Bearer {config.token}"}
    try:
        async with httpx.AsyncClient(base_url=config.api, headers=headers, timeout=5.0) as http:
            executor = build_executor(config, log.bind(node=config.node))
            try:
                await Agent(config, http, executor, metrics).run(stop, detach)
            finally:
                executor.close()
    finally:
        if server is not None:
            server[0].shutdown()
            server[0].server_close()


def agent_main(argv: list[str]) -> int:
    """Entry point of `roving agent`: 2 on bad arguments, 0 after a TERM or INT (its jobs are stopped) or a USR1 (it
    detaches: its jobs run on, and the next agent on this work directory adopts them; `roving up` stops so)."""
    from api.logs import configure_logging

    configure_logging(os.environ.get("ROVING_LOG_FORMAT", ""))
    # a line per API call (httpx logs each at INFO) is the API's to log; here it cost the agent a tenth of its CPU
    logging.getLogger("httpx").setLevel(logging.WARNING)
    try:
        config = parse_args(argv)
        check_tenancy(config, os.geteuid())
    except UsageError as error:
        print(f"roving agent: error: {error}", file=sys.stderr)
        return 2

    async def main() -> None:
        stop, detach, loop = asyncio.Event(), asyncio.Event(), asyncio.get_running_loop()

        def stopping() -> None:
            stop.set()
            exit_at_the_latest(config.kill_grace + STOP_MARGIN)

        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, stopping)
        def detach_and_stop() -> None:
            detach.set()
            stopping()

        loop.add_signal_handler(DETACH, detach_and_stop)
        try:
            await run_agent(config, stop, detach)
        finally:
            stop_listening(loop)

    asyncio.run(main())
    return 0


def exit_at_the_latest(seconds: float) -> None:
    """A stopping agent is gone within `seconds`, whatever it waits on: its jobs are stopped within their kill grace,
    and what is left (reports, the log stream) is bounded, so this only ends a stop that hangs (a killed `roving up`
    sends its agents TERM and expects them gone)."""
    def gone() -> None:
        print(f"roving agent: still stopping after {seconds:.0f}s: exiting", file=sys.stderr, flush=True)
        os._exit(1)

    timer = threading.Timer(seconds, gone)
    timer.daemon = True
    timer.start()


def stop_listening(loop: asyncio.AbstractEventLoop) -> None:
    """Once the agent is stopping, further TERM, INT and USR1 are ignored, and the loop's handlers go before the loop
    closes: asyncio closes its wakeup pipe first and removes them after, and a signal in between (a provisioner's
    delete sends a second TERM) was written to the closed pipe: 'Exception ignored ... signal wakeup fd'."""
    for signum in (signal.SIGTERM, signal.SIGINT, DETACH):
        loop.remove_signal_handler(signum)  # the last one out also resets the wakeup fd
        signal.signal(signum, signal.SIG_IGN)
