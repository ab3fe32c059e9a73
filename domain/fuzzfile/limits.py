"""The Fuzzfile's bounds: every count, size and duration a submission may ask for, and the checks that name them.

Why bounds at all: a value accepted here is stored in an event and read by every later scheduler pass, so a
number the pass cannot compute with (a timedelta past year 9999, a CEL int64 overflow, a memory size of
`.inf`) would stall the loop for everyone. The README's "Limits" section lists these same numbers.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import msgspec

from domain.fuzzfile.decode import join
from domain.fuzzfile.schema import Problem, Workflow

if TYPE_CHECKING:  # stages are listed by domain.fuzzfile.stages, which imports this module's limits
    from domain.fuzzfile.stages import Stage

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
# A save is one atomic JetStream batch (at most 1,000 messages) of ~2 messages per stage it makes ready (StageReadied,
# Allocation Requested; older logs had a Readied too, so the cap stays where it was) plus the event that caused it:
# at submission the stages with no dependency start, later the end (or readiness) of one step starts its dependents.
# Skips cascading down a chain are one event.
MAX_READY_STAGES = 300
MAX_STEPS = 5_000  # jobs and services: a failure's cascade of skips names each (~100 bytes a step, one event)
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


def ready_at_once(workflow: Workflow) -> tuple[int, str]:
    """The most stages one save can make ready, and which step's end does it ("" for the submission: every step
    with no dependency); a task array counts up to its concurrency, a service its replicas."""
    steps: dict[str, Any] = {**(workflow.jobs or {}), **(workflow.services or {})}
    sizes = {name: _slots(step) for name, step in steps.items()}
    dependents: dict[str, set[str]] = {}
    for name, step in steps.items():
        for need in step.depends_on or []:
            dependents.setdefault(need.name, set()).add(name)
    worst = (sum(sizes[name] for name, step in steps.items() if not step.depends_on), "")
    for name, after in dependents.items():
        worst = max(worst, (sum(sizes.get(d, 0) for d in after), name))
    return worst


def _slots(step: Any) -> int:
    array = getattr(step, "task_array", None)
    if array is not None:
        tasks = max(0, array.end - array.start + 1)
        return int(min(tasks, array.concurrency or tasks))
    return max(int(getattr(step, "replicas", None) or 1), 1)


def check_size(workflow: Workflow) -> list[Problem]:
    """Problems of a workflow too large to save: steps, stages one save starts, then the definition event's size."""
    steps = len(workflow.jobs or {}) + len(workflow.services or {})
    if steps > MAX_STEPS:
        return [Problem("jobs", f"a workflow may have at most {MAX_STEPS:,} jobs and services, this one has "
                                f"{steps:,}; split it into several workflows or use a task array")]
    count, after = ready_at_once(workflow)
    if count > MAX_READY_STAGES and not after:
        message = (f"a workflow may start at most {MAX_READY_STAGES} stages at once (jobs, services and "
                   f"task-array tasks up to their concurrency), this one starts {count:,} at submission; chain "
                   f"them with depends-on, split it into several workflows or set task-array concurrency")
        return [Problem("jobs", message)]
    if count > MAX_READY_STAGES:
        message = (f"at most {MAX_READY_STAGES} stages may start at once; when {after} ends, its {count:,} "
                   f"dependents (task-array tasks up to their concurrency) would; chain them or set task-array "
                   f"concurrency")
        return [Problem(f"jobs.{after}" if after in (workflow.jobs or {}) else f"services.{after}", message)]
    size = len(msgspec.msgpack.encode(workflow))
    if size > MAX_DEFINITION_BYTES:
        message = (f"the definition is {size:,} bytes once encoded, over the {MAX_DEFINITION_BYTES:,}-byte limit "
                   f"for one event (JetStream's 1 MiB message); move large files or scripts into the image or a volume")
        return [Problem("", message)]
    return []


def check_stage_totals(stages: list[Stage]) -> list[Problem]:
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
