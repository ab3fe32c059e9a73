"""One command's unit of work: each aggregate loaded once, and a command that lost a write race decided again.

Without it, a command that touches two allocations placed on one node loaded that Node twice, changed both
copies and saved both: the log refused its own second copy and the user saw "gave up after repeated concurrent
writes". With it, every `repository.get` inside a command returns the one instance that command already holds
(domain.app.scoped_repository), so all its changes to an aggregate go out as one run of versions in one atomic
commit.

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

from eventsourcing.application import AggregateNotFoundError, Application, ProcessingEvent
from eventsourcing.persistence import IntegrityError, RecordConflictError, Recording

from domain.app.errors import Busy, Conflict, NotFound, StaleEpoch, WriteRace
from domain.app.scoped_repository import ScopedRepository

A = TypeVar("A")
F = TypeVar("F", bound=Callable[..., Any])
ATTEMPTS = 12  # each attempt reloads what it reads; contention that outlasts this answers Busy (503, retry later)


class UnitOfWork(Application[UUID]):
    """What every handler shares: the scoped repository, `load` by kind, and `save` of one command's changes.

    Storage comes from configuration (PERSISTENCE_MODULE), through eventsourcing's abstract recorder."""

    def __init__(self, env: dict[str, str] | None = None) -> None:
        # Aggregates are cached and caught up with only their new events (the library's fast-forward): a node or a
        # task array that has seen thousands of events is not replayed from its first on every command.
        super().__init__(env={"AGGREGATE_CACHE_MAXSIZE": "5000", **(env or {})})
        self.last_position = 0
        self._position_lock = threading.Lock()
        self._deferred = threading.local()

    def construct_repository(self) -> ScopedRepository:  # type: ignore[override]  # a view over the library's, not one
        """The library's repository, seen through the running command's identity map (one load per command)."""
        self._scoped = ScopedRepository(super().construct_repository())
        return self._scoped

    @property
    def repository(self) -> ScopedRepository:  # type: ignore[override]  # the scoped view `construct_repository` made
        return self._scoped

    def _record(self, processing_event: Any) -> Any:
        """As the library records, but what is kept in memory is decided by the repository (see `saved`)."""
        recordings = self.events.put(processing_event.events, tracking=processing_event.tracking,
                                     **processing_event.saved_kwargs)
        self.repository.saved(processing_event.aggregates)
        return recordings

    def _commit(self, objs: list[Any], kwargs: dict[str, Any]) -> list[Recording[UUID]]:
        """As the library's `save` (collect, record, snapshot, notify), but collecting by what each object has:
        the library's isinstance checks against runtime Protocols took 2% of the control plane's CPU under load."""
        processing: ProcessingEvent[UUID] = ProcessingEvent()
        for obj in objs:
            if hasattr(obj, "collect_events"):  # an aggregate
                processing.events.extend(obj.collect_events())
                processing.aggregates[obj.id] = obj
            else:  # an event on its own
                processing.events.append(obj)
        processing.saved_kwargs.update(kwargs)
        recordings: list[Recording[UUID]] = self._record(processing)
        self._take_snapshots(processing)
        self._notify(recordings)
        return recordings

    def load(self, kind: type[A], aggregate_id: UUID, what: str) -> A:
        try:
            found = self.repository.get(aggregate_id)
        except AggregateNotFoundError as error:
            raise NotFound(what) from error
        if not isinstance(found, kind):
            raise NotFound(what)
        return found

    def deferring(self) -> _Deferred:
        """`with uow.deferring():` the saves inside collect their aggregates, and leaving commits them all at once
        (many agent reports of one request: one commit, not one each). Nothing is committed if the block raises."""
        return _Deferred(self)

    def save(self, *objs: Any, **kwargs: Any) -> list[Recording[UUID]]:
        """Every change of one command in one atomic commit; a stale writer gets WriteRace (the command decides
        again), never a 500. An aggregate named twice is saved once."""
        deferred = getattr(self._deferred, "objs", None)
        if deferred is not None and not kwargs:
            held = [obj for obj in objs if obj is not None]
            deferred.extend(held)
            self.repository.hold(held)  # the command's later lookups find what it made, unsaved as it is
            return []
        unique = list({id(obj): obj for obj in objs if obj is not None}.values())
        try:
            recordings = self._commit(unique, kwargs)
        except (IntegrityError, RecordConflictError) as error:
            raise self._race(unique, error) from error
        if recordings:
            self._landed_at(recordings[-1].notification.id)
        return recordings

    def save_apart(self, *aggregates: Any) -> None:
        """Each aggregate in a commit of its own, all handed to the log at once (pipelined) when the recorder can
        (`insert_apart`), else one after another. Some may land and others not: those that landed are kept, and the
        first refusal is raised (WriteRace for a conflict), as `save` raises it."""
        insert = getattr(self.recorder, "insert_apart", None)
        if insert is None or len(aggregates) < 2 or getattr(self._deferred, "objs", None) is not None:
            for aggregate in aggregates:
                self.save(aggregate)
            return
        outcomes = insert([[self.mapper.to_stored_event(e) for e in a.collect_events()] for a in aggregates])
        self.repository.saved({a.id: a for a, o in zip(aggregates, outcomes, strict=True) if isinstance(o, list)})
        if positions := [o[-1] for o in outcomes if isinstance(o, list) and o]:
            self._landed_at(max(positions))
        refused = [(a, o) for a, o in zip(aggregates, outcomes, strict=True) if not isinstance(o, list)]
        if not refused:
            return
        error = refused[0][1]
        if isinstance(error, (IntegrityError, RecordConflictError)):
            raise self._race([a for a, _ in refused], error) from error
        raise error

    def _landed_at(self, position: int) -> None:
        """A commit of this thread's command reached `position` of the log (read-your-writes waits for it)."""
        with self._position_lock:
            self.last_position = max(self.last_position, position)
        _SAVED.position = max(getattr(_SAVED, "position", 0), position)

    def _race(self, aggregates: list[Any], error: Exception) -> WriteRace:
        """The log refused `aggregates` for a concurrent writer: forget their stale copies; the command decides again."""
        self.repository.refused(aggregates, getattr(error, "moved", None))
        return WriteRace(f"someone changed this at the same time ({error})")


_SAVED = threading.local()  # the log position of the last save made on each thread


def saved_position() -> int:
    """The log position of the last save this thread made since it last asked (0: none), for a caller that waits
    until the views show its own writes (and not every write the process made since)."""
    position, _SAVED.position = getattr(_SAVED, "position", 0), 0
    return position


class _Deferred:
    def __init__(self, uow: UnitOfWork) -> None:
        self.uow = uow

    def __enter__(self) -> None:
        if getattr(self.uow._deferred, "objs", None) is not None:
            raise RuntimeError("deferring() does not nest")
        self.uow._deferred.objs = []

    def __exit__(self, kind: Any, *_: Any) -> None:
        objs, self.uow._deferred.objs = self.uow._deferred.objs, None
        if kind is None and objs:
            self.uow.save(*objs)


class Recheck(WriteRace):
    """A command decided on copies from memory that the log may have moved past: it decides again (see `doubt`)."""


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
                except (StaleEpoch, Conflict, NotFound) as refusal:
                    if not repository.doubt():
                        raise  # decided on what the log says
                    repository.forget()  # decided on memory: again, on copies caught up with the log
                    if attempt == ATTEMPTS:  # never a refusal the log may not bear out: the caller asks again
                        raise Busy(f"{method.__name__} could not confirm its answer against the log ({refusal}); "
                                   "try again") from refusal
        finally:
            repository.leave()
        raise AssertionError("unreachable")  # pragma: no cover - the loop returns or raises

    return run  # type: ignore[return-value]  # `run` takes and returns what `method` does
