"""Configuration handlers: read and change the cluster's ClusterConfig (cluster admins), and the settings commands use."""

from __future__ import annotations

from copy import deepcopy
from datetime import datetime
from typing import Any

from eventsourcing.application import AggregateNotFoundError

from domain.app import access
from domain.app.errors import Invalid
from domain.app.unit_of_work import UnitOfWork, command
from domain.cluster_config import ClusterConfig, ConfigRejected
from domain.fuzzfile import Problem
from domain.scheduler.config import KEYS, SchedulerConfig, validate_config
from domain.tenancy.permissions import Principal


class ConfigHandlers:
    def __init__(self, uow: UnitOfWork, cluster: str) -> None:
        self.uow, self.cluster = uow, cluster
        self._id = ClusterConfig.create_id(cluster)
        # The settings' last parse, with the revision and settings it was made from: a submit asks for them ~5
        # times, and validating is a function of the settings alone (the revision too, as 1 == True in a dict's
        # comparison), so each revision is validated once, not on every ask. SchedulerConfig is frozen: sharing it
        # between commands and threads is safe.
        self._parsed: tuple[int, dict[str, Any], SchedulerConfig] | None = None
        self._default: SchedulerConfig | None = None

    def config(self, principal: Principal) -> dict[str, Any]:
        access.config_reader(principal)
        found = self._config()
        settings = dict(found.settings) if found else {}
        return {"revision": found.revision if found else 0, "settings": settings, "defaults": defaults(settings)}

    def scheduler_config(self) -> SchedulerConfig:
        found = self._config()
        if found is None:
            if self._default is None:
                self._default = validate_config({})[0]
            return self._default
        parsed = self._parsed
        if parsed is not None and parsed[0] == found.revision and parsed[1] == found.settings:
            return parsed[2]
        config = found.scheduler()
        self._parsed = (found.revision, deepcopy(found.settings), config)  # a copy: the aggregate's own may change after
        return config

    def max_eviction_restarts(self) -> int:
        return int(self.scheduler_config().max_eviction_restarts)

    def max_monitoring_percent(self) -> float:
        return float(self.scheduler_config().max_monitoring_held_percent)

    @command
    def change_config(self, changes: dict[str, Any], principal: Principal, at: datetime) -> list[str]:
        access.config_changer(principal)
        found = self._config() or ClusterConfig(cluster=self.cluster, by=principal.username, at=at)
        try:
            warnings = found.change(changes, by=principal.username, at=at)
        except ConfigRejected as error:
            raise Invalid([_problem(p) for p in error.problems]) from error
        self.uow.save(found)
        return warnings

    def _config(self) -> ClusterConfig | None:
        try:  # one lookup, not `in` and then `get` (each a read of the repository)
            found: ClusterConfig = self.uow.repository.get(self._id)
        except AggregateNotFoundError:
            return None
        return found


def defaults(settings: dict[str, Any]) -> dict[str, Any]:
    """Every key left unset, with the value it takes by default (what `config get` shows marked as such)."""
    default = SchedulerConfig()
    return {key: getattr(default, field) for key, (field, _) in KEYS.items() if key not in settings}


def _problem(problem: Any) -> Problem:
    where = f" (line {problem.line}, column {problem.column})" if getattr(problem, "line", None) else ""
    return Problem(path=problem.key, message=f"{problem.reason}{where}")
