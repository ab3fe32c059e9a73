"""The Fuzzfile's bounds: every count, size and duration a submission may ask for, and the checks that name them.

Why bounds at all: a value accepted here is stored in an event and read by every later scheduler pass, so a
number the pass cannot compute with (a timedelta past year 9999, a CEL int64 overflow, a memory size of
`.inf`) would stall the loop for everyone. The README's "Limits" section lists these same numbers.
"""

from __future__ import annotations

import math

import msgspec

from domain.fuzzfile.decode import join
from domain.fuzzfile.schema import Problem, Workflow

DAY = 86_400
MAX_EXECUTE_SECONDS = 365 * DAY          # timeout.execute
MAX_RETRY_ATTEMPTS = 100                 # policy.retry.attempts
MAX_TASK_ID = 1_000_000                  # task-array start and end
MAX_TASKS = 10_000                       # task ids in one task array (end - start + 1)
MAX_CONCURRENCY = 200                    # task-array concurrency
MAX_REPLICAS = 100                       # services.*.replicas
MAX_NODES = 4_096                        # multinode.nodes
MAX_PROCS_PER_NODE = 4_096               # multinode.procs-per-node
MAX_CORES = 65_536                       # resource.cpu.cores
MAX_SOCKETS = 1_024                      # resource.cpu.sockets
MAX_DEVICES = 1_024                      # resource.devices.<name>
MAX_MEMORY_BYTES = 2**50                 # resource.memory.size (1 PiB), also after by-core is multiplied
MAX_PROBE_SECONDS = DAY                  # readiness-probe delays, periods and timeouts
MAX_PROBE_THRESHOLD = 1_000              # readiness-probe success and failure thresholds
# A submission is saved as one atomic JetStream batch (at most 1,000 messages) of ~3 messages per stage made
# ready at once (StageReadied, Allocation Requested, Readied) plus the Submitted event and endpoint claims.
MAX_READY_STAGES = 300
# The Submitted event carries the whole definition; JetStream refuses a message over its max_payload (1 MiB by
# default), so the definition keeps ~100 KiB clear for the event's name, owner and headers.
MAX_DEFINITION_BYTES = 900 * 1024


def out_of_range(value: int | float, low: int | float, high: int | float, what: str, unit: str = "") -> str | None:
    """The message for a value outside [low, high] (or not finite), naming both bounds; None when it fits."""
    if isinstance(value, float) and not math.isfinite(value):
        return f"{what} must be a finite number between {low:,}{unit} and {high:,}{unit}, got {value}"
    if low <= value <= high:
        return None
    return f"{what} must be between {low:,}{unit} and {high:,}{unit}, got {value:,}{unit}"


def bounded(problems: list[Problem], path: str, value: int | float | None, low: int | float, high: int | float,
            what: str, unit: str = "") -> None:
    """Append a problem at `path` when a set value is out of range; unset values are the defaults' business."""
    if value is None:
        return
    message = out_of_range(value, low, high, what, unit)
    if message is not None:
        problems.append(Problem(path, message))


def ready_stage_count(workflow: Workflow) -> int:
    """The most stages one save can make ready at once: every job and service, task arrays up to concurrency."""
    count = len(workflow.services or {})
    for job in (workflow.jobs or {}).values():
        array = job.task_array
        if array is None:
            count += 1
        else:
            tasks = max(0, array.end - array.start + 1)
            count += min(tasks, array.concurrency or tasks)
    return count


def check_size(workflow: Workflow) -> list[Problem]:
    """Problems of a workflow too large to save as one submission: ready stages, then the event's size."""
    count = ready_stage_count(workflow)
    if count > MAX_READY_STAGES:
        message = (f"a workflow may start at most {MAX_READY_STAGES} stages at once (jobs, services and "
                   f"task-array tasks up to their concurrency), this one starts {count:,}; split it into several "
                   f"workflows or set task-array concurrency")
        return [Problem("jobs", message)]
    size = len(msgspec.msgpack.encode(workflow))
    if size > MAX_DEFINITION_BYTES:
        message = (f"the definition is {size:,} bytes once encoded, over the {MAX_DEFINITION_BYTES:,}-byte limit "
                   f"for one event (JetStream's 1 MiB message); move large files or scripts into the image or a volume")
        return [Problem("", message)]
    return []


def check_stage_totals(stages: list) -> list[Problem]:
    """Per stage after defaults and by-core are applied: memory stays within MAX_MEMORY_BYTES (one per step)."""
    problems: list[Problem] = []
    seen: set[str] = set()
    for stage in stages:
        if stage.step in seen:
            continue
        seen.add(stage.step)
        section = "services" if stage.kind == "service" else "jobs"
        memory = stage.resources.memory_bytes
        if memory > MAX_MEMORY_BYTES:
            message = (f"memory comes to {memory:,} bytes (size x cores with by-core), over the limit of "
                       f"{MAX_MEMORY_BYTES:,} bytes (1 PiB)")
            problems.append(Problem(join(join(section, stage.step), "resource") + ".memory", message))
    return problems
