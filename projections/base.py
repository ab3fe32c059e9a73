"""What every read model shares: apply each (position, event) once, dispatch by event type, mirror aggregates.

A projection registers handlers with `@on(events.Submitted, ...)` (the event classes, so a name the domain lost
fails at import), or `@on(Workflow.Event)` for every event of an aggregate (each aggregate has its own `Event`
base). Events it has no handler for still advance its position, so redelivery after a restart is skipped the same way.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from typing import Any, Generic, TypeVar
from uuid import UUID

from eventsourcing.domain import Aggregate, DomainEventProtocol

from domain.ids import as_uuid

__all__ = ["A", "Batch", "Handler", "Mirror", "Projection", "as_uuid", "handled", "kind_of", "on"]

Batch = Iterable[tuple[int, DomainEventProtocol[UUID]]]
Handler = Callable[[Any, Any], None]


H = TypeVar("H", bound=Handler)


def on(*events: type[Aggregate.Event]) -> Callable[[H], H]:
    """Mark a method as the handler of these event classes (an aggregate's `Event`: all of that aggregate's)."""
    def mark(method: H) -> H:
        method.__handles__ = events  # type: ignore[attr-defined]  # a mark the Projection class collects
        return method
    return mark


def handled(projection: type[Projection]) -> dict[type, tuple[Handler, ...]]:
    """The event classes a projection class registered handlers for, with them (for tests and readers)."""
    return dict(projection._handlers)


def kind_of(event: Any) -> str:
    """The event's type as handlers name it, e.g. `Allocation.Placed`."""
    return type(event).__qualname__


class Projection:
    """A plain read model fed batches of (position, event); `lock` guards readers against the tailer.

    `transient` names attributes a snapshot leaves out: caches rebuilt on use. Everything else is the state the
    log built (a view holds nothing else), saved and restored as it is."""

    _handlers: dict[type, tuple[Handler, ...]] = {}
    _routes: dict[type, tuple[Handler, ...]] = {}
    transient: tuple[str, ...] = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        handlers = dict(cls._handlers)
        for attribute in vars(cls).values():
            for event_class in getattr(attribute, "__handles__", ()):
                handlers[event_class] = handlers.get(event_class, ()) + (attribute,)
        cls._handlers = handlers
        cls._routes = {}  # event class -> its handlers, in order

    def __init__(self, lock: threading.RLock | None = None) -> None:
        self.position = 0
        self.applying = 0  # the position of the event being handled, for rows that cite it
        self.lock = lock or threading.RLock()
        # moves with every event this view handles (and a restore), never otherwise: what a reader made from this
        # view holds while it stands still (not saved: a snapshot's state is the log's)
        self.revision = 0

    def apply(self, batch: Batch) -> int:
        """Apply the events past the recorded position; returns how many were new."""
        fresh = 0
        with self.lock:
            for position, event in batch:
                if position <= self.position:
                    continue
                self.applying = position
                if self._dispatch(event):
                    self.revision += 1
                self.position = position
                fresh += 1
        return fresh

    def saved_state(self) -> dict[str, Any]:
        """The log-built state, for a snapshot (call under the lock)."""
        skip = {"lock", "applying", "revision", *self.transient}
        return {name: value for name, value in vars(self).items() if name not in skip}

    def restore_state(self, state: dict[str, Any]) -> None:
        """Take a snapshot's state; the transient attributes keep the fresh values `__init__` gave them."""
        with self.lock:
            vars(self).update(state)
            self.revision += 1

    def _dispatch(self, event: Any) -> bool:
        """The aggregate-wide handler (its `Event` base, earlier in the class's MRO) first, then this class's own;
        False when this view has none for the event."""
        handlers = self._routes.get(type(event))
        if handlers is None:  # worked out once per event class
            handlers = self._routes[type(event)] = tuple(
                h for cls in reversed(type(event).__mro__) for h in self._handlers.get(cls, ()))
        for handler in handlers:
            handler(self, event)
        return bool(handlers)


A = TypeVar("A", bound=Aggregate)


class Mirror(Generic[A]):
    """Aggregates of one kind rebuilt by replaying their events, so a view shows exactly what the domain holds."""

    def __init__(self) -> None:
        self.items: dict[UUID, A] = {}

    def apply(self, event: Any) -> A:
        aggregate: A = event.mutate(self.items.get(event.originator_id))
        self.items[event.originator_id] = aggregate
        return aggregate

    def get(self, aggregate_id: UUID | str | None) -> A | None:
        key = as_uuid(aggregate_id)
        return self.items.get(key) if key is not None else None

    def values(self) -> list[A]:
        return list(self.items.values())
