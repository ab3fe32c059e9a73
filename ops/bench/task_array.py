"""Task-array benchmark: submit and run to the end 1k, 10k and 100k-task arrays in the pure Workflow aggregate.

One JSON line: seconds to submit, seconds to submit and run every task (started, exited 0, its events
collected after each round as a save would), the peak traced memory of a submission, and the ratio of
100k to 10k, which is ~10 for linear work and ~100 for quadratic. Arrays past validation's cap
(`domain.fuzzfile.limits.MAX_TASKS`) are built past it on purpose: the aggregate must not depend on the cap.
"""

from __future__ import annotations

import json
import sys
import time
import tracemalloc
from datetime import UTC, datetime, timedelta
from pathlib import Path
from uuid import UUID

import msgspec

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from domain.fuzzfile import parse_fuzzfile  # noqa: E402
from domain.workflow import Workflow  # noqa: E402

SIZES = (1_000, 10_000, 100_000)
CONCURRENCY = 8
T0 = datetime(2025, 1, 1, tzinfo=UTC)
TEXT = (f"version: v4\njobs:\n  r: {{image: {{uri: docker://alpine}}, script: 'true',"
        f" task-array: {{start: 1, end: 2, concurrency: {CONCURRENCY}}}}}\n")


def definition(tasks: int):
    parsed = parse_fuzzfile(TEXT).definition
    job = parsed.jobs["r"]
    wide = msgspec.structs.replace(job, task_array=msgspec.structs.replace(job.task_array, end=tasks))
    return msgspec.structs.replace(parsed, jobs={"r": wide})


def submit(tasks: int) -> Workflow:
    return Workflow.submit(UUID(int=1), "bench", definition(tasks), {"user": "bench"}, by="bench", at=T0)


def run_to_end(tasks: int) -> float:
    began = time.perf_counter()
    workflow = submit(tasks)
    workflow.collect_events()
    for round_ in range(tasks + 1):
        ready = workflow.ready_stages()
        if not ready:
            break
        at = T0 + timedelta(seconds=round_)
        for r in ready:
            workflow.stage_started(r.stage.name, r.attempt, "n1", at)
            workflow.stage_exited(r.stage.name, r.attempt, 0, at)
        workflow.collect_events()
    took = time.perf_counter() - began
    assert workflow.status == "FINISHED" and workflow.stages_ended == tasks, workflow.status
    return took


def submission(tasks: int) -> tuple[float, int]:
    tracemalloc.start()
    began = time.perf_counter()
    submit(tasks)
    took = time.perf_counter() - began
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return took, peak


def main() -> None:
    submitted = {n: submission(n) for n in SIZES}
    ran = {n: run_to_end(n) for n in SIZES}
    print(json.dumps({
        "bench": "task_array", "concurrency": CONCURRENCY,
        "submit_seconds": {str(n): round(submitted[n][0], 4) for n in SIZES},
        "submit_peak_bytes": {str(n): submitted[n][1] for n in SIZES},
        "run_to_end_seconds": {str(n): round(ran[n], 3) for n in SIZES},
        "us_per_task": {str(n): round(ran[n] / n * 1e6, 1) for n in SIZES},
        "ratio_100k_10k": round(ran[100_000] / ran[10_000], 2),
    }))


if __name__ == "__main__":
    main()
