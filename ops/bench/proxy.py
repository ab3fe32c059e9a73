"""Proxy benchmark: requests/s and p50 latency through `/endpoints/{name}/` versus calling the service directly.

Three processes, as deployed: a tiny keep-alive HTTP service (uvicorn), the API (in-memory store, real views,
uvicorn on loopback) with one endpoint bound to it, and this one driving both over HTTP in the same run.
Separate processes keep the client's threads off the servers' GIL. Prints one JSON line.
"""

from __future__ import annotations

import json
import logging
import statistics
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path
from uuid import uuid4

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import httpx  # noqa: E402
import structlog  # noqa: E402
import uvicorn  # noqa: E402

from adapters.auth.password_hash import ScryptPasswords  # noqa: E402
from adapters.auth.tokens import Identity, issue  # noqa: E402
from adapters.nats_server import free_port  # noqa: E402
from api.composition.services import Services  # noqa: E402
from api.composition.settings import load_settings  # noqa: E402
from api.http.app import create_app  # noqa: E402
from domain.app import Roving  # noqa: E402
from domain.app.ids import allocation_id, endpoint_id, user_id  # noqa: E402
from domain.tenancy import Role  # noqa: E402
from domain.tenancy.permissions import Principal  # noqa: E402
from projections.views import Views  # noqa: E402

KEY = b"b" * 32
SAMPLES, RATE_REQUESTS, THREADS = 2000, 4000, 8
ADMIN = Principal(user_id=user_id("bench"), username="bench", role=Role.CLUSTER_ADMIN, organization_id=None,
                  is_cluster_admin=True)


async def service(scope, receive, send) -> None:
    """The model stand-in: 200 with a small body, as fast as ASGI gets."""
    if scope["type"] != "http":
        return
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")]})
    await send({"type": "http.response.body", "body": b"ok"})


def serve(app, port: int) -> uvicorn.Server:
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="error", access_log=False))
    threading.Thread(target=server.run, daemon=True).start()
    while not server.started:
        time.sleep(0.02)
    return server


def bound_api(service_port: int) -> Services:
    env = {"PERSISTENCE_MODULE": "eventsourcing.popo", "TRANSCODER_TOPIC": "adapters.transcoder:MsgspecTranscoder"}
    roving, views, now = Roving(env=env, passwords=ScryptPasswords()), Views(), datetime.now(UTC)
    # a token speaks only for an account that exists (api.http.auth.principal_of)
    roving.create_user(None, "bench", "bench@example.org", "Correct-Horse-9-battery", "cluster_admin", ADMIN, now)
    roving.create_endpoint("bench", "user", "user", ADMIN, now)
    definition = {"version": "v4", "services": {"model": {
        "image": {"uri": "docker://alpine"}, "script": "serve", "persist": True,
        "network": {"ports": [{"name": "http", "port": service_port}],
                    "endpoints": [{"name": "bench", "port-name": "http", "persistent": True}]}}}}
    workflow = uuid4()
    roving.submit_workflow(workflow, "bench", definition, 0, None, ADMIN, now)
    node, _ = roving.register_node("n1", 4, 8 << 30, {}, {}, "pool", "127.0.0.1", 9100, now)
    alloc = allocation_id(workflow, "model", 1)
    roving.report(node, alloc, roving.place(alloc, [node], "bench", now), "ready", None, "", now)
    records = roving.recorder.select_notifications(start=1, limit=10_000)
    views.apply([(r.id, roving.mapper.to_domain_event(r)) for r in records])
    assert views.endpoints.find(endpoint_id("bench")).serving_target() is not None
    return Services(roving=roving, views=views, key=KEY)


def p50_ms(client: httpx.Client, url: str) -> float:
    samples = []
    for _ in range(SAMPLES):
        started = time.perf_counter()
        assert client.get(url).status_code == 200
        samples.append((time.perf_counter() - started) * 1000)
    return statistics.median(samples)


def rate(url: str, headers: dict[str, str]) -> float:
    def worker(n: int) -> None:
        with httpx.Client(headers=headers, timeout=30) as client:
            for _ in range(n):
                assert client.get(url).status_code == 200

    started = time.perf_counter()
    with ThreadPoolExecutor(THREADS) as pool:
        list(pool.map(worker, [RATE_REQUESTS // THREADS] * THREADS))
    return RATE_REQUESTS / (time.perf_counter() - started)


def run_service(port: int) -> None:
    serve(service, port)
    threading.Event().wait()


def run_api(port: int, service_port: int) -> None:
    # The per-request access log is measured by the API bench; here it would swamp the proxy's own cost.
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    serve(create_app(load_settings({}), bound_api(service_port)), port)
    threading.Event().wait()


def started(role: str, *ports: int) -> subprocess.Popen:
    """This file again as `role`, answering once its first port takes requests."""
    child = subprocess.Popen([sys.executable, __file__, role, *map(str, ports)])
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            httpx.get(f"http://127.0.0.1:{ports[0]}/", timeout=1)
            return child
        except httpx.TransportError:
            if child.poll() is not None:
                raise SystemExit(f"the {role} process exited with {child.returncode}") from None
            time.sleep(0.05)
    child.kill()
    raise SystemExit(f"the {role} process did not answer within 30 s")


def main() -> None:
    service_port, api_port = free_port(), free_port()
    children = [started("service", service_port)]
    try:
        children.append(started("api", api_port, service_port))
        print(json.dumps(measure(service_port, api_port)))
    finally:
        for child in children:
            child.terminate()
            child.wait(10)


def measure(service_port: int, api_port: int) -> dict:
    token = issue(Identity(user_id=ADMIN.user_id, username="bench", role=Role.CLUSTER_ADMIN, organization_id=None),
                  KEY, timedelta(hours=1), datetime.now(UTC))
    headers = {"FB-Authorization": f"Bearer {token}"}
    direct, proxied = f"http://127.0.0.1:{service_port}/v1/ping", f"http://127.0.0.1:{api_port}/endpoints/bench/v1/ping"
    with httpx.Client(headers=headers, timeout=30) as client:
        for url in (direct, proxied):  # warm both connection pools
            for _ in range(200):
                client.get(url)
        direct_p50, proxied_p50 = p50_ms(client, direct), p50_ms(client, proxied)
    direct_rps, proxied_rps = rate(direct, headers), rate(proxied, headers)
    return {
        "bench": "proxy", "samples": SAMPLES, "threads": THREADS,
        "direct_p50_ms": round(direct_p50, 3), "proxied_p50_ms": round(proxied_p50, 3),
        "added_p50_ms": round(proxied_p50 - direct_p50, 3), "target_added_p50_ms": 2.0,
        "direct_rps": round(direct_rps), "proxied_rps": round(proxied_rps),
        "proxied_vs_direct_rps": round(proxied_rps / direct_rps, 3),
    }


if __name__ == "__main__":
    roles = {"service": run_service, "api": run_api}
    if len(sys.argv) > 1:
        roles[sys.argv[1]](*map(int, sys.argv[2:]))
    else:
        main()
