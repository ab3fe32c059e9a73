"""One command's unit of work: each aggregate loaded once, and a command that lost a write race decided again.

Without it, a command that touches two allocations placed on one node loaded that Node twice, changed both
copies and saved both: the log refused its own second copy and the user saw "gave up after repeated concurrent
writes". With it, every `repository.get` inside a command returns the one instance that command already holds,
so all its changes to an aggregate go out as one run of versions in one atomic commit.

A command whose commit meets a concurrent writer (`WriteRace`, raised by the application's save) is run again
from the start on fresh state: nothing of the failed attempt landed (commits are atomic), and commands are
deterministic in their inputs (time and ids come in as arguments), so the retry decides exactly what the command
would have decided had it come second. Only the outermost command retries; a command called by another joins
its caller's unit of work.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import Any, TypeVar
from uuid import UUID

from eventsourcing.application import AggregateNotFoundError, Application
from eventsourcing.persistence import IntegrityError, RecordConflictError

from domain.app.errors import Busy, NotFound, WriteRace

A = TypeVar("A")
F = TypeVar("F", bound=Callable[..., Any])
ATTEMPTS = 12  # each attempt reloads what it reads; contention that outlasts this answers Busy (503, retry later)


class IdentityMap:
    """The aggregates one command has loaded, by id."""

    def __init__(self) -> None:
        self.loaded: dict[Any, Any] = {}


class ScopedRepository:
    """The application's repository, seen through the running command's identity map (if any)."""

    def __init__(self, repository: Any) -> None:
        self._inner = repository
        self._local = threading.local()

    @property
    def scope(self) -> IdentityMap | None:
        return getattr(self._local, "scope", None)

    def get(self, aggregate_id: Any, **kwargs: Any) -> Any:
        scope = self.scope
        if scope is None or kwargs:
            return self._inner.get(aggregate_id, **kwargs)
        key = _key(aggregate_id)
        if key not in scope.loaded:
            scope.loaded[key] = self._inner.get(aggregate_id)
        return scope.loaded[key]

    def __contains__(self, aggregate_id: Any) -> bool:
        scope = self.scope
        if scope is not None and _key(aggregate_id) in scope.loaded:
            return True
        return aggregate_id in self._inner

    def forget(self) -> None:
        """After a lost race: what the command holds is stale, so the next read goes to the log."""
        if self.scope is not None:
            self.scope.loaded.clear()

    def enter(self) -> bool:
        """Open a scope for this thread; False when one is already open (a nested command)."""
        if self.scope is not None:
            return False
        self._local.scope = IdentityMap()
        return True

    def leave(self) -> None:
        self._local.scope = None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class UnitOfWork(Application[UUID]):
    """What every handler shares: the scoped repository, `load` by kind, and `save` of one command's changes.

    Storage comes from configuration (PERSISTENCE_MODULE), through eventsourcing's abstract recorder."""

    def __init__(self, env: dict[str, str] | None = None) -> None:
        # Aggregates are cached and caught up with only their new events (the library's fast-forward): a node or a
        # task array that has seen thousands of events is not replayed from its first on every command.
        super().__init__(env={"AGGREGATE_CACHE_MAXSIZE": "5000", **(env or {})})
        self.last_position = 0
        self._position_lock = threading.Lock()

    def construct_repository(self) -> ScopedRepository:  # type: ignore[override]
        """The library's repository, seen through the running command's identity map (one load per command)."""
        return ScopedRepository(super().construct_repository())

    def load(self, kind: type[A], aggregate_id: UUID, what: str) -> A:
        try:
            found = self.repository.get(aggregate_id)
        except AggregateNotFoundError as error:
            raise NotFound(what) from error
        if not isinstance(found, kind):
            raise NotFound(what)
        return found

    def save(self, *objs: Any, **kwargs: Any):
        """Every change of one command in one atomic commit; a stale writer gets WriteRace (the command decides
        again), never a 500. An aggregate named twice is saved once."""
        unique = list({id(obj): obj for obj in objs if obj is not None}.values())
        try:
            recordings = super().save(*unique, **kwargs)
        except (IntegrityError, RecordConflictError) as error:
            raise WriteRace(f"someone changed this at the same time ({error})") from error
        if recordings:
            with self._position_lock:
                self.last_position = max(self.last_position, recordings[-1].notification.id)
        return recordings


def command(method: F) -> F:
    """A handler's command (its handler holds the unit of work as `uow`), run in a unit of work, again from the
    start after a lost write race."""

    @functools.wraps(method)
    def run(self: Any, *args: Any, **kwargs: Any) -> Any:
        repository: ScopedRepository = self.uow.repository
        if not repository.enter():
            return method(self, *args, **kwargs)
        try:
            for attempt in range(1, ATTEMPTS + 1):
                try:
                    return method(self, *args, **kwargs)
                except WriteRace as race:
                    repository.forget()
                    if attempt == ATTEMPTS:
                        raise Busy(f"{method.__name__} kept meeting concurrent writes ({race}); try again") from race
        finally:
            repository.leave()
        raise AssertionError("unreachable")  # pragma: no cover - the loop returns or raises

    return run  # type: ignore[return-value]


def _key(aggregate_id: Any) -> Any:
    return aggregate_id if isinstance(aggregate_id, UUID) else UUID(str(aggregate_id))
