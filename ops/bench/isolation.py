"""Start latency of a trivial job on the host, in a cgroup as nobody, in a cgroup as nobody in the host sandbox
(adapters/runtime/host.py: what every host job of a root agent gets where bwrap runs; `cgroup` is what it had
before), and in a cached OCI image under bwrap, side by side in one run, and the pull + unpack time of a small image
from a loopback registry; one JSON line.

Each figure is the median of ROUNDS runs of `true` from Executor.start to its reported exit, rounds interleaved
(host, cgroup, sandbox, oci, host, ...) so that machine noise falls on all of them alike. Needs root, bwrap, skopeo,
docker-registry and busybox-static; without them it prints what is missing.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from adapters import cgroups  # noqa: E402
from adapters.executor import Executor, JobUser  # noqa: E402
from adapters.runspec import local_spec  # noqa: E402
from adapters.runtime.bwrap import OciRuntime  # noqa: E402
from adapters.runtime.host import HostSandbox  # noqa: E402
from adapters.runtime.images import ImageCache, machine_has  # noqa: E402
from tests.integration.test_isolation_image import Registry, build_layout  # noqa: E402

ROUNDS = 30


def once(executor: Executor, index: int, image: str | None) -> float:
    spec = local_spec(allocation_id=f"bench-{index}", epoch=1, workflow_id="bench", stage=f"s{index}", command=["true"],
                   image=image)
    started = time.perf_counter()
    result = executor.start(spec, lambda *a: None, lambda *a: None).wait(30)
    if result != (0, "exited with code 0"):
        raise RuntimeError(f"the trivial job failed: {result}")
    return time.perf_counter() - started


def main() -> None:
    missing = machine_has("bwrap", "skopeo", "docker-registry", "busybox")
    if os.geteuid() != 0 or missing:
        print(json.dumps({"bench": "isolation", "skipped": "needs root and " + ", ".join(missing or ["nothing else"])}))
        return
    root = Path(tempfile.mkdtemp(prefix="roving-bench-"))
    root.chmod(0o755)
    build_layout(root / "layout", "1.0")
    registry = Registry(root)
    hierarchy, isolation = cgroups.detect(f"bench-{root.name}")
    try:
        image = registry.push(root / "layout", "1.0", "bench/busybox")
        nobody = JobUser(uid=65534, gid=65534, name="nobody")
        cache = ImageCache(root / "images")
        pulled = cache.rootfs(image)  # cold: pull and unpack into an empty cache
        executors = {
            "host": (Executor(root / "host", kill_grace=0.3), None),
            "cgroup": (Executor(root / "cgroup", kill_grace=0.3, cgroups=hierarchy, user=nobody), None),
            "sandbox": (Executor(root / "sandbox", kill_grace=0.3, cgroups=hierarchy, user=nobody,
                                 sandbox=HostSandbox.found()), None),
            "oci": (Executor(root / "oci", kill_grace=0.3, cgroups=hierarchy, user=nobody,
                             runtime=OciRuntime(cache, (root / "oci").resolve())), image),
        }
        times: dict[str, list[float]] = {name: [] for name in executors}
        for index in range(ROUNDS):
            for name, (executor, ref) in executors.items():
                times[name].append(once(executor, index, ref))
        median = {name: statistics.median(values) * 1000 for name, values in times.items()}
        print(json.dumps({
            "bench": "isolation", "rounds": ROUNDS, "cgroups": isolation,
            "start_ms": {name: round(value, 2) for name, value in median.items()},
            "added_ms_vs_host": {name: round(median[name] - median["host"], 2) for name in ("cgroup", "sandbox", "oci")},
            "sandbox_added_ms_vs_cgroup": round(median["sandbox"] - median["cgroup"], 2),
            "pull_unpack_s": round(pulled.seconds, 3),
            "image_bytes": sum(f.stat().st_size for f in pulled.rootfs.rglob("*") if f.is_file() and not f.is_symlink()),
        }))
    finally:
        registry.stop()
        if hierarchy is not None:
            hierarchy.close()
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
