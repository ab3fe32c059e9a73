"""Burst: 1,000 one-job workflows from 8 threads on a fresh `roving up`; all must end. One JSON line.

Run: .venv/bin/python ops/soak/burst.py [--workflows 1000] [--threads 8] [--bound 600]
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from ops.soak.stack import SoakStack  # noqa: E402 - the path above makes the repo importable as a script
from ops.soak.tally import Api, Tally  # noqa: E402

DEFINITION = {"version": "v4", "jobs": {"one": {"image": {"uri": "docker://alpine:3.20"}, "command": ["true"],
                                                 "resource": {"cpu": {"cores": 1}, "memory": {"size": "32MiB"}}}}}
ENDED = frozenset({"FINISHED", "FAILED", "CANCELED"})


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--workflows", type=int, default=1000)
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("--nodes", type=int, default=3)
    parser.add_argument("--bound", type=float, default=600.0, help="seconds for every workflow to end")
    args = parser.parse_args(argv)
    root = Path(tempfile.mkdtemp(prefix="roving-burst-"))
    stack, tally = SoakStack(root, nodes=args.nodes, lease=10.0), Tally(0)
    local = threading.local()
    ids: list[str] = []
    lock = threading.Lock()

    def submit(index: int) -> None:
        if not hasattr(local, "api"):
            local.api = Api(stack.url, stack.token("admin"), tally)
        answer = local.api.json("POST", "/v4/workflows", json={"name": f"burst-{index}", "definition": DEFINITION})
        if answer is not None:
            with lock:
                ids.append(answer["id"])

    summary: dict = {"workflows": args.workflows, "threads": args.threads}
    try:
        stack.start()
        began = time.monotonic()
        with ThreadPoolExecutor(args.threads) as pool:
            list(pool.map(submit, range(args.workflows)))
        submitted_s = time.monotonic() - began
        api, open_ = Api(stack.url, stack.token("admin"), tally), set(ids)
        while open_ and time.monotonic() < began + args.bound:
            rows = (api.json("GET", "/v4/workflows") or {}).get("workflows", [])
            open_ = {str(r["id"]) for r in rows if r["status"] not in ENDED} & set(ids)
            if open_:
                time.sleep(1)
        took = time.monotonic() - began
        api.close()
        summary.update({"submitted": len(ids), "submit_s": round(submitted_s, 2), "took_s": round(took, 2),
                        "jobs_per_s": round((len(ids) - len(open_)) / took, 2), "not_ended": len(open_),
                        "refused_or_failed_submits": args.workflows - len(ids),
                        "api_calls": dict(sorted(tally.calls.items())), "http_5xx": tally.violations.get("http_5xx", 0)})
    finally:
        stack.stop()
        shutil.rmtree(root, ignore_errors=True)
    print(json.dumps(summary), flush=True)
    return 0 if summary.get("not_ended") == 0 and summary.get("submitted") == args.workflows else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
