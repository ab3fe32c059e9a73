"""A service's watch on its node: readiness (its probe passing, its backoff over, or at once without either) and
liveness (a hung service, its probe failing in a row, is killed; the exit's reason names the probe). The probes
run in threads of their own and tell the agent's loop through `notify`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec

from adapters.probes import ProbeRunner, liveness
from api.agent.slots import Slot

Notify = Callable[[tuple], None]  # thread-safe: ("ready", allocation) or ("unready", allocation, why)


def watch_service(slot: Slot, notify: Notify, later: Callable[[float, tuple], Any]) -> bool:
    """Start a service's probes; True when it is ready at once (the caller reports its ports now)."""
    spec, running = slot.spec, slot.running
    delay = spec.start_delay_seconds or 0.0  # a restarted service's backoff: not ready before it starts again
    ready_now = False
    if spec.readiness_probe is not None:
        slot.probe = ProbeRunner(
            delayed(spec.readiness_probe, delay), lambda: notify(("ready", spec.allocation_id)),
            lambda why: running.cancel(why), cwd=running.workdir,
            on_unready=lambda why: notify(("unready", spec.allocation_id, why)),
        ).start()
    elif delay:
        later(delay, ("ready", spec.allocation_id))
    else:
        ready_now = True
    if spec.liveness_probe is not None:
        watch_liveness(slot, spec.liveness_probe, delay)
    return ready_now


def watch_liveness(slot: Slot, watched: Any, delay: float) -> None:
    """A hung service (its liveness probe failing in a row) is killed; the exit's reason names the probe."""
    running = slot.running
    slot.liveness = liveness(delayed(watched, delay), lambda why: running.cancel(why), cwd=running.workdir).start()


def delayed(probe: Any, delay: float) -> Any:
    """The probe's initial delay after a restart's backoff too."""
    if not delay:
        return probe
    return msgspec.structs.replace(probe, initial_delay_seconds=(probe.initial_delay_seconds or 0) + delay)
