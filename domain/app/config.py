"""Configuration handlers: read and change the cluster's ClusterConfig (cluster admins), and the settings commands use."""

from __future__ import annotations

from datetime import datetime
from typing import Any

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

    def config(self, principal: Principal) -> dict[str, Any]:
        access.config_reader(principal)
        found = self._config()
        settings = dict(found.settings) if found else {}
        return {"revision": found.revision if found else 0, "settings": settings, "defaults": defaults(settings)}

    def scheduler_config(self) -> SchedulerConfig:
        found = self._config()
        return found.scheduler() if found else validate_config({})[0]

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
        cid = ClusterConfig.create_id(self.cluster)
        return self.uow.repository.get(cid) if cid in self.uow.repository else None


def defaults(settings: dict[str, Any]) -> dict[str, Any]:
    """Every key left unset, with the value it takes by default (what `config get` shows marked as such)."""
    default = SchedulerConfig()
    return {key: getattr(default, field) for key, (field, _) in KEYS.items() if key not in settings}


def _problem(problem: Any) -> Problem:
    where = f" (line {problem.line}, column {problem.column})" if getattr(problem, "line", None) else ""
    return Problem(path=problem.key, message=f"{problem.reason}{where}")
