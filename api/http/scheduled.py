"""The scheduler's last pass joined to the views, for the answers and pages that show both.

The views hold only what the log says; this process's runner keeps its last pass to itself (`Services.scheduling`,
api.scheduler.state). A queue row of this cluster shows the priority the runner ranked it by when the pass named it,
else the one the view's expression gives; `why` explains this cluster's work from the runner's reasons and another
cluster's (on a federated control plane) from the `SchedulingBlocked` causes the hub holds of it; `last_pass` in the
stats is the runner's figures (`{}` before it led). Another cluster's rows and figures are its own views' alone.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import partial
from typing import Any
from uuid import UUID

from starlette.requests import Request

from api.http.fanout import Located
from api.http.routes import common as c
from domain.scheduler.last_pass import LastPass
from domain.scheduler.reasons import Why
from projections.views import Views


def last_pass(request: Request) -> LastPass:
    """The runner's last pass, taken once per answer (its parts always belong to one pass)."""
    return c.services(request).scheduling.last


def ranked(request: Request, local: bool = True) -> Mapping[str, float] | None:
    """The priorities the queue rows of this cluster (`local`) are shown with where the runner named them; None
    for another cluster's rows, which show their own expression's."""
    return last_pass(request).priorities if local else None


def reasons(request: Request, found: Located) -> Callable[[UUID | str], Why | None]:
    """Each allocation's reason for the located workflow: this runner's last pass, or for a workflow of another
    cluster its latest `SchedulingBlocked` cause as the hub's events hold it."""
    view = found.fan.view if found.fan is not None else None
    if view is not None:
        return partial(view.blocked, found.cluster)
    return last_pass(request).why


def queue_stats(views: Views, last: LastPass | None) -> dict[str, Any]:
    """The queue view's figures with `last_pass`: this runner's figures when `last` is given, else `{}` (another
    cluster's views, whose runner's figures the log does not carry)."""
    return {**views.queue.stats(), "last_pass": dict(last.stats) if last is not None else {}}
