"""ReadModels: what the application asks the views at decision time, and the default that knows nothing.

The application keeps no index of nodes, owners' allocations or tenants' priorities; the composition root
hands it the views' answers through this one interface:

- `node_definitions()`: the pools registered nodes form, for the submission check; none at all, submissions
  are accepted and wait for nodes.
- `owner_priorities(owner)`: organization, group and user priorities of a workflow's owner, so a submission
  reads no tenancy aggregate; None, the application loads the aggregates.
- `node_segments()` (optional): the storage segments registered nodes are in, so a volume of a segment no node
  provides is refused at submission; absent or None, only conflicting segments are.
- `live_allocations_of(kind, owner_id)`: the queued and running allocations of an organization, group or
  user; none, a priority change records only the tenancy event.
- `allocations_on(node_id)` (optional): the allocations running on a node (placed there, not ended), for the
  commands that take work off it; absent or None, the application reads which were placed there from the log.
- `project_paths()` and `member_projects(username)` (optional): the live projects, and those a user belongs to;
  absent, the cluster is taken to be in open mode (work needs no project unless it names one).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol
from uuid import UUID

from domain.scheduler.snapshot import Definition


class ReadModels(Protocol):
    def node_definitions(self) -> Sequence[Definition]: ...

    def owner_priorities(self, owner: dict[str, str]) -> dict[str, int] | None: ...

    def live_allocations_of(self, kind: str, owner: UUID) -> Iterable[UUID]: ...


class NoReadModels:
    """Nothing known: submissions accepted, priorities read from the aggregates, no propagation."""

    def node_definitions(self) -> Sequence[Definition]:
        return ()

    def owner_priorities(self, owner: dict[str, str]) -> dict[str, int] | None:
        return None

    def live_allocations_of(self, kind: str, owner: UUID) -> Iterable[UUID]:
        return ()


@dataclass(frozen=True)
class ReadModelFunctions:
    """ReadModels from plain functions (a composition root's views, a test's lambdas); an absent one knows nothing."""

    definitions: Callable[[], Sequence[Definition]] | None = None
    priorities: Callable[[dict[str, str]], dict[str, int]] | None = None
    allocations_of_owner: Callable[[str, UUID], Iterable[UUID]] | None = None
    segments: Callable[[], set[str] | None] | None = None
    projects: Callable[[], list[str]] | None = None
    projects_of: Callable[[str], list[str]] | None = None
    running_on: Callable[[UUID], Iterable[UUID]] | None = None

    def allocations_on(self, node: UUID) -> list[UUID] | None:
        """The allocations running on a node; None: not known (the application reads the log)."""
        return list(self.running_on(node)) if self.running_on is not None else None

    def project_paths(self) -> list[str] | None:
        """Every live project's path; None: not known (open mode)."""
        return self.projects() if self.projects is not None else None

    def member_projects(self, username: str) -> list[str]:
        return self.projects_of(username) if self.projects_of is not None else []

    def node_segments(self) -> set[str] | None:
        """The storage segments registered nodes are in; None: not known (segments are then not checked)."""
        return self.segments() if self.segments is not None else None

    def node_definitions(self) -> Sequence[Definition]:
        return self.definitions() if self.definitions is not None else ()

    def owner_priorities(self, owner: dict[str, str]) -> dict[str, int] | None:
        return self.priorities(owner) if self.priorities is not None else None

    def live_allocations_of(self, kind: str, owner: UUID) -> Iterable[UUID]:
        return self.allocations_of_owner(kind, owner) if self.allocations_of_owner is not None else ()
