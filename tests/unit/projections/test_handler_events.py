"""Every projection handler is registered for event classes the domain really emits, and a lost event stops imports."""

import importlib
import inspect
import pkgutil
import typing

from eventsourcing.domain import Aggregate, DecoratedFuncCaller

import domain
import projections
from domain.holds import Effect, Source
from domain.node import Node
from projections import events
from projections.base import Projection, handled, on
from tests.unit.projections.builders import at, node


def subclasses(cls: type) -> list[type]:
    found = []
    for sub in cls.__subclasses__():
        found += [sub, *subclasses(sub)]
    return found


def import_all(package) -> None:
    for module in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
        importlib.import_module(module.name)


def emitting_aggregate(event_class: type) -> type | None:
    """The aggregate that holds this class as one of its events (or as its `Event`, all of them) and has a
    command that emits it: eventsourcing's `@event` made it from one, or it is the aggregate's creation."""
    for aggregate in subclasses(Aggregate):
        if vars(aggregate).get(event_class.__name__) is not event_class:
            continue
        if event_class is aggregate.Event or issubclass(event_class, (DecoratedFuncCaller, Aggregate.Created)):
            return aggregate
    return None


def test_every_projection_handler_names_an_event_class_some_aggregate_emits():
    import_all(domain)
    import_all(projections)
    registered = {(view.__name__, event_class) for view in subclasses(Projection) for event_class in handled(view)}
    assert len(registered) > 40  # every view with handlers was found, not an empty walk
    strays = sorted(f"{view} handles {event.__qualname__}" for view, event in registered
                    if emitting_aggregate(event) is None)
    assert strays == []


def test_every_event_class_the_activity_stream_tells_is_one_some_aggregate_emits():
    from projections.activity import MESSAGES

    assert len(MESSAGES) > 25
    assert sorted(e.__qualname__ for e in MESSAGES if emitting_aggregate(e) is None) == []


def test_a_handler_typed_with_an_event_class_is_registered_only_for_events_of_that_class():
    import_all(projections)
    mistyped = []
    for view in subclasses(Projection):
        for event_class, handlers in handled(view).items():
            for handler in handlers:
                event_parameter = list(inspect.signature(handler).parameters)[1]  # after self
                annotation = typing.get_type_hints(handler).get(event_parameter)
                if annotation not in (None, typing.Any) and not issubclass(event_class, annotation):
                    mistyped.append(f"{view.__name__}.{handler.__name__} takes {annotation}, gets {event_class}")
    assert mistyped == []


class HandlerOrder(Projection):
    def __init__(self) -> None:
        super().__init__()
        self.seen: list[str] = []

    @on(events.HoldPlaced)
    def _specific(self, event: object) -> None:
        self.seen.append("HoldPlaced")

    @on(Node.Event)
    def _wide(self, event: object) -> None:
        self.seen.append("any Node event")


def test_an_aggregate_wide_handler_runs_before_the_one_for_the_event_class():
    n = node("n1")
    n.place_hold("h1", Effect.CORDON, Source.ADMIN, "bios", by="alice", at=at(1))
    view = HandlerOrder()
    view.apply([(i + 1, e) for i, e in enumerate(n.collect_events())])
    assert view.seen == ["any Node event", "any Node event", "any Node event", "HoldPlaced"]
