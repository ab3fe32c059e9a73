"""Federation fan-out benchmark: a hub and two member clusters on loopback nats-servers, each member's
control plane writing WORKFLOWS five-job submissions. Prints one JSON line.

It times what a federated control plane does for `queue show` and `workflow why` on another cluster's work:
the first read of the hub (the whole federated stream into each member's own views), a refresh with nothing
new (the member states only), a refresh after TAIL more submissions (only the new tail is read), and the
merged queue page of both members from the views the hub built.
Usage: python ops/bench/federation.py [WORKFLOWS] [TAIL]
"""

from __future__ import annotations

import json
import logging
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from uuid import uuid4

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import structlog  # noqa: E402

from adapters.federation import Federation  # noqa: E402
from adapters.federation_members import Member  # noqa: E402
from adapters.hub_log import HubReader  # noqa: E402
from adapters.nats_server import LeafSpec, NatsServer  # noqa: E402
from domain.app import Roving  # noqa: E402
from domain.tenancy import Role  # noqa: E402
from domain.tenancy.permissions import Principal  # noqa: E402

ADMIN = Principal(user_id=uuid4(), username="bench", role=Role.CLUSTER_ADMIN, organization_id=None,
                  is_cluster_admin=True)
DEFINITION = {"version": "v4", "jobs": {
    f"j{i}": {"image": {"uri": "docker://alpine"}, "script": "true", "resource": {"cpu": {"cores": 1}}}
    for i in range(5)}}
CLUSTERS = ("c1", "c2")


def submit(app: Roving, count: int) -> None:
    for n in range(count):
        app.submit_workflow(uuid4(), f"wf-{n}", DEFINITION, 0, None, ADMIN, datetime.now(UTC), definitions=[])


def converged(federation: Federation) -> None:
    deadline = time.monotonic() + 120
    while not all(m.state == "in-sync" for m in federation.status().members):
        if time.monotonic() > deadline:
            raise SystemExit("the hub did not catch up with both members in 120 s")
        time.sleep(0.2)


def timed(step) -> float:
    start = time.perf_counter()
    step()
    return time.perf_counter() - start


def main(workflows: int, tail: int) -> dict:
    root = Path(tempfile.mkdtemp(prefix="roving-bench-federation-"))
    hub = NatsServer(root / "hub", name="hub", domain="hub", leaf=LeafSpec(port=0)).start()
    servers = [NatsServer(root / c, name=c, domain=c, leaf=LeafSpec(remotes=[hub.leaf_url])).start() for c in CLUSTERS]
    apps = {c: Roving(env={"PERSISTENCE_MODULE": "adapters.jetstream", "ROVING_NATS_URL": s.url, "ROVING_CLUSTER": c})
            for c, s in zip(CLUSTERS, servers, strict=True)}
    try:
        for app in apps.values():
            submit(app, workflows)
        federation = Federation(hub.url, [Member(c, c) for c in CLUSTERS])
        federation.ensure()
        converged(federation)
        reader = HubReader(hub.url)
        first = timed(reader.refresh)
        idle = [timed(reader.refresh) for _ in range(10)]
        submit(apps["c1"], tail)
        converged(federation)
        after_tail = timed(reader.refresh)
        view = reader.view

        def merged_page() -> None:
            rows = []
            for cluster in CLUSTERS:
                rows += view.cluster_views(cluster).queue.page(limit=500, live_only=True)[0]
            rows.sort(key=lambda r: -r.priority)
        page = [timed(merged_page) for _ in range(10)]
        events = sum(view.events_per_cluster().values())
        return {"bench": "federation", "workflows_per_member": workflows, "tail": tail, "hub_events": events,
                "first_load_s": round(first, 3), "events_per_s_first_load": round(events / first),
                "refresh_idle_ms_p50": round(statistics.median(idle) * 1000, 1),
                "refresh_after_tail_ms": round(after_tail * 1000, 1),
                "merged_queue_page_ms_p50": round(statistics.median(page) * 1000, 1),
                "rows": sum(view.cluster_views(c).queue.stats()["total"] for c in CLUSTERS)}
    finally:
        for app in apps.values():
            app.close()
        for server in [*servers, hub]:
            server.stop()


if __name__ == "__main__":
    logging.disable(logging.CRITICAL)
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.CRITICAL))
    args = [int(a) for a in sys.argv[1:3]]
    print(json.dumps(main(*(args + [500, 50][len(args):]))))
