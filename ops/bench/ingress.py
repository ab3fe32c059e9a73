"""Ingress throughput against a plain `curl` of the same file: one file served over loopback HTTP, fetched ROUNDS
times each way, rounds interleaved; one JSON line.

"roving" is the whole ingress stage as a node runs it (Executor.start of an `ingress` RunSpec to its reported
exit: process start, interpreter and httpx import, the download, the rename into the volume); "transfer_only" is
the same program's own figure for the bytes alone (from its `done, N bytes in T s` line). Set INGRESS_BENCH_MIB
for another size (default 256).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from adapters.executor import Executor  # noqa: E402
from adapters.runspec import local_spec  # noqa: E402

ROUNDS = 5
MIB = int(os.environ.get("INGRESS_BENCH_MIB", "256"))
DONE = re.compile(r"done, (\d+) bytes in ([0-9.]+) s")


class Quiet(SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:
        pass


def roving(executor: Executor, url: str, round_: int) -> tuple[float, float]:
    out: list[bytes] = []
    spec = local_spec(allocation_id=f"bench-{round_}", epoch=1, workflow_id=f"bench-{round_}", stage="ingress:data",
                   kind="ingress", volume="data", transfers=[{"source": url, "destination": "file://file.bin"}])
    started = time.perf_counter()
    result = executor.start(spec, lambda _, chunk: out.append(chunk), lambda *_: None).wait(600)
    total = time.perf_counter() - started
    if result is None or result[0] != 0:
        raise SystemExit(f"ingress failed: {result}: {b''.join(out).decode(errors='replace')[-500:]}")
    seconds = float(DONE.search(b"".join(out).decode()).group(2))
    executor.volumes.keep_only(set())
    return total, seconds


def curl(url: str, target: Path) -> float:
    started = time.perf_counter()
    subprocess.run(["curl", "-sSf", "-o", str(target), url], check=True)
    took = time.perf_counter() - started
    target.unlink()
    return took


def main() -> None:
    if shutil.which("curl") is None:
        print(json.dumps({"bench": "ingress", "skipped": "curl is not installed"}))
        return
    root = Path(tempfile.mkdtemp(prefix="roving-bench-ingress-"))
    served = root / "served"
    served.mkdir()
    with (served / "file.bin").open("wb") as f:
        for _ in range(MIB):
            f.write(os.urandom(1 << 20))
    server = ThreadingHTTPServer(("127.0.0.1", 0), partial(Quiet, directory=str(served)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/file.bin"
    executor = Executor(root / "work", kill_grace=1)
    figures: dict[str, list[float]] = {"roving": [], "transfer_only": [], "curl": []}
    try:
        for round_ in range(ROUNDS):
            total, seconds = roving(executor, url, round_)
            figures["roving"].append(total)
            figures["transfer_only"].append(seconds)
            figures["curl"].append(curl(url, root / "curl.bin"))
    finally:
        server.shutdown()
        server.server_close()
        shutil.rmtree(root, ignore_errors=True)
    median = {name: statistics.median(values) for name, values in figures.items()}
    rate = {name: round(MIB / seconds, 1) for name, seconds in median.items()}
    print(json.dumps({
        "bench": "ingress", "rounds": ROUNDS, "mib": MIB, "seconds": {k: round(v, 3) for k, v in median.items()},
        "mib_per_s": rate, "roving_vs_curl": round(rate["roving"] / rate["curl"], 2),
    }))


if __name__ == "__main__":
    main()
