"""Scheduler and node-health configuration: the keys, their defaults, and pure validation of a settings dict.

`validate_config` lists every problem at once (key, CEL line/column where known, reason) so the API can
answer 400 before touching the ClusterConfig aggregate.
"""
from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Mapping
from typing import Any

import msgspec

from domain.fuzzfile.limits import MAX_EXECUTE_SECONDS
from domain.ids import MAX_POSIX_ID
from domain.project_paths import ProjectError, check_path
from domain.quantities import MAX_SHARED, QuantityError, parse_memory
from domain.scheduler.priority import DEFAULT_PRIORITY, PriorityError, compile_priority


class SchedulerConfig(msgspec.Struct, frozen=True, kw_only=True):
    priority: str = DEFAULT_PRIORITY
    interval_seconds: float = 30.0
    backfill_enabled: bool = True
    preemption_enabled: bool = False
    min_preemption_runtime_seconds: float = 60.0
    preemption_gap: float = 10.0
    preemption_threshold: float = 75.0
    preemption_multi_victim_enabled: bool = False
    max_evictions_per_tick: int = 8
    ignored_annotations: tuple[str, ...] = ()
    max_preemptions_per_window: int = 3
    preemption_window_seconds: float = 3600.0
    max_monitoring_held_percent: float = 20.0
    max_eviction_restarts: int = 3
    uid_range: tuple[int, int] = (100000, 199999)  # posix.*: where new users' and groups' ids come from
    gid_range: tuple[int, int] = (200000, 299999)
    allow_root_jobs: bool = False
    image_builds: bool = True  # images.builds: workflows may build their own images (`images:`)
    storage_root: str = ""  # storage.*: the local provisioner's root ("" none) and its classes (name -> segment)
    storage_classes: dict[str, str] = {}
    shared_resources: dict[str, int] = {}  # scheduler.sharedResources: cluster-wide counted resources (licenses)
    default_project: str = ""  # projects.default: where work goes that names no project and whose group has none
    object_user_bytes: int = 10 * 2**30  # objects.*: what each user's and each group's objects may hold (bytes, count)
    object_user_count: int = 10_000
    object_group_bytes: int = 50 * 2**30
    object_group_count: int = 50_000
    object_store_bytes: int = 100 * 2**30  # objects.storeBytes: all objects together, so the log keeps its room
    catalog_allowed_sources: tuple[str, ...] = ()  # catalog.allowedSources: where non-admins' git sources may be
    default_memory_per_core: int = 0  # scheduler.defaultMemoryPerCore: bytes a core for work asking none (0: no limit)
    log_max_bytes_per_stage: int = 0  # logs.maxBytesPerStage: output a stage attempt's log keeps at most (0: all)
    # scheduler.defaultExecuteTimeout and scheduler.profileExecuteTimeouts: given at submission to a job that sets no
    # execute timeout (domain.fuzzfile.default_timeouts), so it can backfill; 0 and {} give none
    default_execute_timeout_seconds: float = 0.0
    profile_execute_timeouts: dict[str, float] = {}
    # retention.*: the event stream's lifetime (adapters.retention): a finished workflow older than finishedAfter, or
    # the oldest ones while the stream holds more than maxBytes, is archived to Parquet and purged (0: off)
    retention_finished_after_seconds: float = 0.0
    retention_max_bytes: int = 0


class ConfigProblem(msgspec.Struct, frozen=True, kw_only=True):
    key: str
    reason: str
    line: int | None = None
    column: int | None = None

    def __str__(self) -> str:
        where = f" at line {self.line}, column {self.column}" if self.line else ""
        return f"{self.key}{where}: {self.reason}"


class ConfigWarning(msgspec.Struct, frozen=True, kw_only=True):
    key: str
    message: str


class Invalid(ValueError):
    def __init__(self, reason: str, line: int | None = None, column: int | None = None):
        super().__init__(reason)
        self.reason, self.line, self.column = reason, line, column


_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)?\s*$")
_UNIT = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400, None: 1}


def _duration(value: Any) -> float:
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0:
        return float(value)
    found = _DURATION.match(value) if isinstance(value, str) else None
    if not found:
        raise Invalid(f"expected a duration such as 30, '30s', '5m' or '1h', got {value!r}")
    return float(found.group(1)) * _UNIT[found.group(2)]


def _bool(value: Any) -> bool:
    if not isinstance(value, bool):
        raise Invalid(f"expected true or false, got {value!r}")
    return value


def _number(low: float, high: float | None = None) -> Callable[[Any], float]:
    def parse(value: Any) -> float:
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        if not ok or value < low or (high is not None and value > high):
            bounds = f"between {low:g} and {high:g}" if high is not None else f"at least {low:g}"
            raise Invalid(f"expected a number {bounds}, got {value!r}")
        return float(value)
    return parse


def _count(low: int) -> Callable[[Any], int]:
    def parse(value: Any) -> int:
        if not isinstance(value, int) or isinstance(value, bool) or value < low:
            raise Invalid(f"expected a whole number of at least {low}, got {value!r}")
        return value
    return parse


def _id_range(value: Any) -> tuple[int, int]:
    ok = isinstance(value, (list, tuple)) and len(value) == 2 and all(
        isinstance(v, int) and not isinstance(v, bool) for v in value)
    if not ok or not 1 <= value[0] <= value[1] <= MAX_POSIX_ID:
        raise Invalid(f"expected [first, last] with 1 <= first <= last <= {MAX_POSIX_ID}, got {value!r}")
    return (value[0], value[1])


def _names(value: Any) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise Invalid(f"expected a list of annotation names, got {value!r}")
    return tuple(value)


def _root(value: Any) -> str:
    if not isinstance(value, str) or (value and (not value.startswith("/") or ".." in value.split("/"))):
        raise Invalid(f"expected an absolute directory such as /srv/roving/volumes (or \"\" for none), got {value!r}")
    return value.rstrip("/") or ("/" if value else "")


_CLASS = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$")


def _classes(value: Any) -> dict[str, str]:
    """{NAME: {segment: SEGMENT, driver: local}}: each class's segment ("" for none)."""
    if not isinstance(value, Mapping):
        raise Invalid(f"expected {{NAME: {{segment: SEGMENT}}}}, got {value!r}")
    found = {}
    for name, spec in value.items():
        spec = {} if spec is None else spec
        if not isinstance(name, str) or not _CLASS.match(name) or name == "ephemeral":
            raise Invalid(f"{name!r} is not a storage class name (letters, digits, _ . -; not `ephemeral`)")
        if not isinstance(spec, Mapping) or set(spec) - {"segment", "driver"}:
            raise Invalid(f"class {name}: expected {{segment: SEGMENT, driver: local}}, got {spec!r}")
        if spec.get("driver", "local") != "local":
            raise Invalid(f"class {name}: driver {spec['driver']!r} does not exist; this cluster has `local`")
        segment = spec.get("segment") or ""
        if not isinstance(segment, str):
            raise Invalid(f"class {name}: segment must be a name, got {segment!r}")
        found[name] = segment
    return found


_SHARED = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


def _shared(value: Any) -> dict[str, int]:
    """{NAME: COUNT}: how many of each shared resource the whole cluster has (e.g. {ansys: 20})."""
    if not isinstance(value, Mapping):
        raise Invalid(f"expected {{NAME: COUNT}}, e.g. {{ansys: 20}}, got {value!r}")
    found = {}
    for name, count in value.items():
        if not isinstance(name, str) or not _SHARED.match(name):
            raise Invalid(f"{name!r} is not a shared resource name (letters, digits, _ . -; at most 64)")
        if not isinstance(count, int) or isinstance(count, bool) or not 0 <= count <= MAX_SHARED:
            raise Invalid(f"{name}: expected a whole number from 0 to {MAX_SHARED:,}, got {count!r}")
        found[name] = count
    return found


def _bytes(value: Any) -> int:
    """A size: a whole number of bytes or a string such as 10GiB."""
    try:
        return parse_memory(value)
    except (QuantityError, TypeError) as error:
        raise Invalid(str(error)) from None


_ALLOWED_SOURCE = re.compile(r"^(https|http|ssh|git)://(\*\.)?[A-Za-z0-9.-]+(:\d{1,5})?$")


def _allowed_sources(value: Any) -> tuple[str, ...]:
    """["https://github.com", "ssh://*.example.org:22", ...]: the schemes and hosts non-admins' git sources use."""
    if not isinstance(value, list) or not all(isinstance(v, str) and _ALLOWED_SOURCE.match(v) for v in value):
        raise Invalid(f"expected a list of scheme://host[:port] (https, http, ssh or git; a host may start with *.), "
                      f"got {value!r}")
    return tuple(value)
def _execute_timeout(value: Any) -> float:
    seconds = _duration(value)
    if seconds > MAX_EXECUTE_SECONDS:
        raise Invalid(f"an execute timeout may be at most {MAX_EXECUTE_SECONDS // 86_400} days, got {value!r}")
    return seconds


def _profile_timeouts(value: Any) -> dict[str, float]:
    """{PROFILE: DURATION}: the default execute timeout of jobs that use that profile (`profile: NAME`)."""
    if not isinstance(value, Mapping):
        raise Invalid(f"expected {{PROFILE: DURATION}}, e.g. {{gpu: 4h}}, got {value!r}")
    found = {}
    for name, duration in value.items():
        if not isinstance(name, str) or not _SHARED.match(name):
            raise Invalid(f"{name!r} is not a profile name")
        try:
            found[name] = _execute_timeout(duration)
        except Invalid as error:
            raise Invalid(f"{name}: {error.reason}") from None
    return found


def _project(value: Any) -> str:
    if value == "":
        return ""
    try:
        return check_path(value)
    except ProjectError as error:
        raise Invalid(error.reason) from None


def _expression(value: Any) -> str:
    if not isinstance(value, str):
        raise Invalid(f"expected a CEL expression string, got {value!r}")
    try:
        compile_priority(value)
    except PriorityError as error:
        raise Invalid(error.reason, error.line, error.column) from None
    return value


KEYS: dict[str, tuple[str, Callable[[Any], Any]]] = {
    "scheduler.priority": ("priority", _expression),
    "scheduler.interval": ("interval_seconds", _duration),
    "scheduler.backfillEnabled": ("backfill_enabled", _bool),
    "scheduler.preemptionEnabled": ("preemption_enabled", _bool),
    "scheduler.minPreemptionRuntime": ("min_preemption_runtime_seconds", _duration),
    "scheduler.preemptionGap": ("preemption_gap", _number(0)),
    "scheduler.preemptionThreshold": ("preemption_threshold", _number(0, 100)),
    "scheduler.preemptionMultiVictimEnabled": ("preemption_multi_victim_enabled", _bool),
    "scheduler.maxEvictionsPerTick": ("max_evictions_per_tick", _count(1)),
    "scheduler.ignoredAnnotations": ("ignored_annotations", _names),
    "scheduler.maxPreemptionsPerWindow": ("max_preemptions_per_window", _count(1)),
    "scheduler.preemptionWindow": ("preemption_window_seconds", _duration),
    "nodeHealth.maxMonitoringHeldPercent": ("max_monitoring_held_percent", _number(0, 100)),
    "nodeHealth.maxEvictionRestarts": ("max_eviction_restarts", _count(0)),
    "posix.uidRange": ("uid_range", _id_range),
    "posix.gidRange": ("gid_range", _id_range),
    "posix.allowRootJobs": ("allow_root_jobs", _bool),
    "images.builds": ("image_builds", _bool),
    "storage.local.root": ("storage_root", _root),
    "storage.classes": ("storage_classes", _classes),
    "scheduler.sharedResources": ("shared_resources", _shared),
    "projects.default": ("default_project", _project),
    "objects.userBytes": ("object_user_bytes", _bytes),
    "objects.userObjects": ("object_user_count", _count(0)),
    "objects.groupBytes": ("object_group_bytes", _bytes),
    "objects.groupObjects": ("object_group_count", _count(0)),
    "objects.storeBytes": ("object_store_bytes", _bytes),
    "catalog.allowedSources": ("catalog_allowed_sources", _allowed_sources),
    "scheduler.defaultMemoryPerCore": ("default_memory_per_core", _bytes),
    "logs.maxBytesPerStage": ("log_max_bytes_per_stage", _count(0)),
    "scheduler.defaultExecuteTimeout": ("default_execute_timeout_seconds", _execute_timeout),
    "scheduler.profileExecuteTimeouts": ("profile_execute_timeouts", _profile_timeouts),
    "retention.finishedAfter": ("retention_finished_after_seconds", _duration),
    "retention.maxBytes": ("retention_max_bytes", _bytes),
}

RETIRED: dict[str, str] = {
    "scheduler.recognizedAnnotations":
        "retired and ignored: every requested annotation is matched strictly; "
        "list exceptions in scheduler.ignoredAnnotations",
}


def flatten(settings: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """Accept both {'scheduler.interval': 30} and {'scheduler': {'interval': 30}}."""
    flat: dict[str, Any] = {}
    for key, value in settings.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping) and name not in KEYS:
            flat.update(flatten(value, f"{name}."))
        else:
            flat[name] = value
    return flat


def _unknown(key: str) -> ConfigProblem:
    nearest = difflib.get_close_matches(key, list(KEYS), n=1, cutoff=0.0)
    return ConfigProblem(key=key, reason=f"unknown key; did you mean {nearest[0]}?")


def validate_config(
    settings: Mapping[str, Any],
) -> tuple[SchedulerConfig, list[ConfigWarning], list[ConfigProblem]]:
    """Parse settings over the defaults: the config, warnings (retired keys) and every problem found."""
    values: dict[str, Any] = {}
    warnings: list[ConfigWarning] = []
    errors: list[ConfigProblem] = []
    for key, raw in flatten(settings).items():
        if key in RETIRED:
            warnings.append(ConfigWarning(key=key, message=RETIRED[key]))
        elif key not in KEYS:
            errors.append(_unknown(key))
        else:
            field, parse = KEYS[key]
            try:
                values[field] = parse(raw)
            except Invalid as error:
                errors.append(ConfigProblem(key=key, reason=error.reason, line=error.line, column=error.column))
    config = SchedulerConfig() if errors else SchedulerConfig(**values)
    return config, warnings, errors
