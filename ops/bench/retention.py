"""The event stream's size as finished history grows, with and without the retention (issue 42, the log's lifetime).

An in-process control plane (embedded nats-server, JetStream log, DuckDB audit; no scheduler, no agents) takes
one-job workflows in --steps steps of --per-step each, each submitted and stopped over HTTP (its workflow and
allocation events, as a canceled workflow writes them), with the hot set at --hot. After each step it reports the
stream's messages and bytes, the audit's rows and, with the retention on (`retention.finishedAfter: 1s`), the
archive's files and bytes, and how long `GET /v4/workflows/{id}` of the oldest workflow takes (from the log while
it holds it, from the archive once purged; the cold cache of 64 is passed by then). Each mode runs on its own
data directory; it prints one JSON line.

    .venv/bin/python ops/bench/retention.py [--steps 3] [--per-step 500] [--hot 100]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from api.composition.settings import load_settings  # noqa: E402 - the repository, above ops/bench
from api.composition.stack import Stack  # noqa: E402

JOB = """
version: v1
jobs:
  hello:
    image: {uri: docker://alpine}
    script: "true"
    resource: {cpu: {cores: 1}, memory: {size: 1GiB}}
"""


class InProcess:
    def __init__(self, data_dir: Path, hot: int) -> None:
        settings = load_settings({"ROVING_DATA_DIR": str(data_dir), "ROVING_CLUSTER": "bench",
                                  "ROVING_HOT_WORKFLOWS": str(hot), "ROVING_RETENTION_INTERVAL": "1",
                                  "ROVING_LOG_LEVEL": "warning"})
        self.stack = Stack(settings, scheduler=False, provisioners=False).start()
        self.app = self.stack.app()
        self.token = (data_dir / "admin.token").read_text().strip()

    async def call(self, client: httpx.AsyncClient, method: str, path: str, **kwargs) -> httpx.Response:
        return await client.request(method, path, headers={"Authorization": f"Bearer {self.token}"}, **kwargs)

    async def grow(self, count: int, first: int) -> list[str]:
        transport = httpx.ASGITransport(app=self.app)
        async with httpx.AsyncClient(transport=transport, base_url="http://roving.bench", timeout=60) as client:
            ids = []
            for n in range(first, first + count):
                answer = await self.call(client, "POST", "/v4/workflows", json={"name": f"w-{n}", "definition": JOB})
                ids.append(answer.json()["id"])
                await self.call(client, "PATCH", f"/v4/workflows/{ids[-1]}:stop")
            return ids

    def get_seconds(self, wid: str) -> float:
        async def timed() -> float:
            transport = httpx.ASGITransport(app=self.app)
            async with httpx.AsyncClient(transport=transport, base_url="http://roving.bench") as client:
                began = time.perf_counter()
                answer = await self.call(client, "GET", f"/v4/workflows/{wid}")
                assert answer.status_code == 200, answer.text
                return time.perf_counter() - began
        return asyncio.run(timed())

    def status(self) -> dict:
        async def ask() -> dict:
            transport = httpx.ASGITransport(app=self.app)
            async with httpx.AsyncClient(transport=transport, base_url="http://roving.bench") as client:
                return (await self.call(client, "GET", "/v4/audit/retention")).json()
        return asyncio.run(ask())

    def retain(self) -> None:
        async def change() -> None:
            transport = httpx.ASGITransport(app=self.app)
            async with httpx.AsyncClient(transport=transport, base_url="http://roving.bench") as client:
                await self.call(client, "PUT", "/v4/admin/centralconfig", json={"retention.finishedAfter": "1s"})
        asyncio.run(change())


def settle(running: InProcess, retained: bool, cold: int, seconds: float = 300) -> float:
    """Until the audit caught up and (retained) every cold workflow was archived; the seconds it took."""
    began = time.monotonic()
    while time.monotonic() - began < seconds:
        status = running.status()
        archived = status["archived"]
        caught_up = running.stack.audit_feed is not None and running.stack.audit_feed.position >= status["stream"][
            "first_sequence"]
        if caught_up and (not retained or (archived["workflows"] >= cold and archived["pending_purge"] == 0)):
            return round(time.monotonic() - began, 1)
        time.sleep(0.5)
    raise TimeoutError("the retention did not catch up")


def measure(args: argparse.Namespace, retained: bool) -> list[dict]:
    steps = []
    with tempfile.TemporaryDirectory(prefix="roving-retention-") as tmp:
        running = InProcess(Path(tmp), args.hot)
        try:
            if retained:
                running.retain()
            ids: list[str] = []
            for _ in range(args.steps):
                ids += asyncio.run(running.grow(args.per_step, len(ids)))
                time.sleep(1.5)  # past the one-second age limit
                settled = settle(running, retained, len(ids) - args.hot)
                status = running.status()
                rows = running.stack.audit_store.connection.cursor().execute(
                    "SELECT count(*) FROM audit_events").fetchone()[0] if running.stack.audit_store else None
                gets = [running.get_seconds(ids[n]) for n in range(0, min(len(ids), 200), 2)]  # past the cold cache
                steps.append({"finished": len(ids), "stream_messages": status["stream"]["messages"],
                              "stream_bytes": status["stream"]["bytes"], "audit_rows": rows,
                              "archived_workflows": status["archived"]["workflows"],
                              "archive_files": status["archived"]["files"], "archive_bytes": status["archived"]["bytes"],
                              "settle_s": settled, "get_oldest_ms": round(statistics.median(gets) * 1000, 1)})
                print(json.dumps({"retention": retained, "step": steps[-1]}), file=sys.stderr)
        finally:
            running.stack.stop()
    return steps


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--per-step", type=int, default=500, help="workflows submitted and stopped per step")
    parser.add_argument("--hot", type=int, default=100, help="ROVING_HOT_WORKFLOWS")
    args = parser.parse_args(argv)
    without = measure(args, retained=False)
    with_retention = measure(args, retained=True)
    print(json.dumps({"bench": "retention", "per_step": args.per_step, "hot_workflows": args.hot,
                      "without": without, "with": with_retention}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
