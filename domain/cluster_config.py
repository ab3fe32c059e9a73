"""The ClusterConfig aggregate: the cluster's central, validated and revisioned configuration.

Settings are stored as the user wrote them (flat dotted keys); every change is validated as a whole
against `domain.scheduler.config`, so a rejected change lists every problem and leaves nothing applied.
"""
from __future__ import annotations

from datetime import datetime
from typing import Any
from uuid import NAMESPACE_URL, UUID, uuid5

from eventsourcing.domain import Aggregate, event

from domain.scheduler.config import ConfigProblem, SchedulerConfig, flatten, validate_config


class ConfigRejected(ValueError):
    """A change that would leave the configuration invalid; `problems` names each key and reason."""

    def __init__(self, problems: list[ConfigProblem]):
        super().__init__("; ".join(str(p) for p in problems))
        self.problems = problems


class ClusterConfig(Aggregate):
    @staticmethod
    def create_id(cluster: str, **_: Any) -> UUID:
        return uuid5(NAMESPACE_URL, f"roving:cluster-config:{cluster}")

    class Created(Aggregate.Created):
        cluster: str
        by: str
        at: datetime

    @event(Created)
    def __init__(self, cluster: str, by: str, at: datetime):
        self.cluster = cluster
        self.settings: dict[str, Any] = {}
        self.revision = 0
        self.history: list[dict[str, Any]] = []

    def change(self, changes: dict[str, Any], by: str, at: datetime) -> list[str]:
        """Set keys (None removes a key back to its default); returns warnings, raises ConfigRejected."""
        flat = flatten(changes)
        merged = {k: v for k, v in {**self.settings, **flat}.items() if v is not None}
        _, warnings, errors = validate_config(merged)
        if errors:
            raise ConfigRejected(errors)
        if all(self.settings.get(k) == v for k, v in flat.items()):
            return [f"{w.key}: {w.message}" for w in warnings]
        texts = [f"{w.key}: {w.message}" for w in warnings]
        self._changed(changes=flat, revision=self.revision + 1, warnings=texts, by=by, at=at)
        return texts

    class Changed(Aggregate.Event):
        changes: dict[str, Any]
        revision: int
        warnings: list[str]
        by: str
        at: datetime

    @event(Changed)
    def _changed(self, changes: dict[str, Any], revision: int, warnings: list[str], by: str, at: datetime) -> None:
        for key, value in changes.items():
            if value is None:
                self.settings.pop(key, None)
            else:
                self.settings[key] = value
        self.revision = revision
        self.history.append({"revision": revision, "changes": changes, "by": by, "at": at})

    def reset(self, keys: list[str], by: str, at: datetime) -> list[str]:
        """Return keys to their defaults."""
        return self.change({key: None for key in keys}, by=by, at=at)

    def scheduler(self) -> SchedulerConfig:
        config, _, errors = validate_config(self.settings)
        assert not errors, errors  # every stored revision was validated before it was recorded
        return config

    def settings_at(self, revision: int) -> dict[str, Any]:
        """The settings as they stood at a past revision, for `config history` and rollbacks."""
        settings: dict[str, Any] = {}
        for entry in self.history[:revision]:
            for key, value in entry["changes"].items():
                if value is None:
                    settings.pop(key, None)
                else:
                    settings[key] = value
        return settings
