"""Node holds: their effects and sources, who may release which, and the monitoring ceiling per definition."""

from __future__ import annotations

import enum
import math
from collections.abc import Mapping
from datetime import datetime, timedelta

import msgspec

from domain.scheduler import snapshot
from domain.tenancy.common import Source

DEFAULT_MAX_MONITORING_HELD_PERCENT = 20.0
# Alertmanager resends a firing alert every hour (repeat_interval), and a resend that is refused again records a
# fresh refusal: one older than two hours belongs to an alert that has ended without its resolution reaching us.
REFUSAL_FRESH_FOR = timedelta(hours=2)


class Effect(str, enum.Enum):
    """What a hold does to a node: every effect stops new work; evict and deprovision go further."""

    CORDON = "cordon"
    EVICT = "evict"
    DEPROVISION = "deprovision"


# Who placed a hold: the caller's own source (domain.tenancy), decided by its identity, never by a request body.
HOLD_SOURCES = frozenset({Source.ADMIN, Source.MONITORING, Source.PROVISIONER})


class HoldError(Exception):
    """A hold command the node's holds do not allow; the message says why."""


class ReleaseRefused(HoldError):
    """The releaser's source may not release this hold."""


class UnknownHold(HoldError):
    """No hold with that id is on the node (it may already have been released)."""


class Hold(msgspec.Struct, frozen=True, kw_only=True):
    """One hold on a node: `evict` on a deprovision hold means running work is taken off too."""

    id: str
    effect: Effect
    source: Source
    reason: str
    by: str
    at: datetime
    evict: bool = False

    @property
    def takes_running_work_off(self) -> bool:
        return self.effect is Effect.EVICT or (self.effect is Effect.DEPROVISION and self.evict)

    def to_view(self) -> snapshot.Hold:
        """The scheduler's frozen copy of this hold."""
        return snapshot.Hold(id=self.id, effect=snapshot.HoldEffect(self.effect.value),
                             source=snapshot.HoldSource(self.source.value), reason=self.reason, by=self.by)


class RefusedHold(msgspec.Struct, frozen=True, kw_only=True):
    """A monitoring hold the ceiling refused while its alert fires: placed once the ceiling or the node set allows."""

    id: str
    effect: Effect
    reason: str
    by: str
    at: datetime


class NodeSummary(msgspec.Struct, frozen=True, kw_only=True):
    """What the monitoring ceiling needs to know about one node of a definition."""

    id: str
    monitoring_held: bool


SOURCE_OF_ROLE = {"admin": Source.ADMIN, "monitoring": Source.MONITORING, "provisioner": Source.PROVISIONER}


def source_of(role: str) -> Source:
    """The hold source an authenticated caller's role stands for; other roles may not hold nodes."""
    try:
        return SOURCE_OF_ROLE[role]
    except KeyError:
        allowed = ", ".join(SOURCE_OF_ROLE)
        raise HoldError(f"role {role!r} may not place or release node holds (only {allowed})") from None


def release_refusal(hold: Hold, releaser: Source, force: bool = False) -> str | None:
    """Why `releaser` may not release `hold`, or None when it may: a hold follows its own source's rules."""
    if hold.source is Source.ADMIN and releaser is not Source.ADMIN:
        return f"hold {hold.id} was placed by an admin; only an admin may release it"
    if hold.source is Source.MONITORING and releaser is Source.ADMIN and not force:
        return (f"hold {hold.id} is monitoring evidence ({hold.reason}); it is released when the alert "
                "resolves, or by an admin with force")
    if hold.source is Source.MONITORING and releaser not in (Source.MONITORING, Source.ADMIN):
        return f"hold {hold.id} is monitoring evidence; the {releaser.value} may not release it"
    if hold.source is Source.PROVISIONER and releaser is not Source.PROVISIONER:
        return f"hold {hold.id} belongs to the provisioner; only the provisioner may release it"
    return None


def placed_already(holds: Mapping[str, Hold], hold_id: str, effect: Effect, source: Source) -> Hold | None:
    """The hold `hold_id` of a node's `holds` when it is placed already as asked (placing it again changes nothing),
    None when it is new. Refuses a caller whose source may not hold nodes, and an id another kind of hold has."""
    if source not in HOLD_SOURCES:
        raise HoldError(f"holds are placed by admins, monitoring and provisioners, not by the {source.value} token")
    existing = holds.get(hold_id)
    if existing is not None and (existing.effect, existing.source) != (effect, source):
        raise HoldError(f"hold {hold_id} already exists as a {existing.source.value} {existing.effect.value} hold")
    return existing


def admin_cordons(holds: Mapping[str, Hold]) -> list[str]:
    """What `node uncordon` releases of a node's `holds`: admin cordons only; monitoring and provisioner evidence
    stays."""
    return [h.id for h in holds.values() if h.source is Source.ADMIN and h.effect is Effect.CORDON]


def holds_text(holds: Mapping[str, Hold]) -> str:
    """Why a node's `holds` keep new work off it: each one's effect, id, source and reason."""
    return "; ".join(f"{h.effect.value} hold {h.id} by {h.source.value}: {h.reason}" for h in holds.values())


def monitoring_hold_limit(members: int, percent: float = DEFAULT_MAX_MONITORING_HELD_PERCENT) -> int:
    """How many of a definition's `members` nodes monitoring may hold: `percent` of them rounded down, and at least
    one once the definition has two nodes, so a small cluster can still take a failing node out (20%: 1 node of
    2-9, 2 of 10-14, 20 of 100). A one-node definition is held only at 100%; 0% turns monitoring holds off."""
    if percent <= 0 or members <= 0:
        return 0
    share = min(members, math.floor(members * percent / 100 + 1e-9))
    return max(share, 1) if members >= 2 else share


def monitoring_hold_allowed(
    definition_nodes: list[NodeSummary], node_id: str, percent: float = DEFAULT_MAX_MONITORING_HELD_PERCENT,
    name: str = "",
) -> tuple[bool, str]:
    """May monitoring hold `node_id`, given its definition's nodes and `nodeHealth.maxMonitoringHeldPercent`?

    A node already held by monitoring never counts twice; the node itself counts as a member of its
    definition even when the caller left it out of the list. Messages call the node `name` (else its id).
    """
    held = {n.id for n in definition_nodes if n.monitoring_held}
    if node_id in held:
        return True, f"node {name or node_id} is already held by monitoring"
    members = {n.id for n in definition_nodes} | {node_id}
    limit = monitoring_hold_limit(len(members), percent)
    if len(held) + 1 > limit:
        return False, (
            f"monitoring already holds {len(held)} of {len(members)} nodes in this definition; holding "
            f"{name or node_id} too would pass its limit of {limit} (nodeHealth.maxMonitoringHeldPercent "
            f"{percent:g}% of {len(members)}, at least one from two nodes)" + _none_allowed(len(members), percent)
        )
    return True, f"monitoring would hold {len(held) + 1} of {len(members)} nodes (limit {limit})"


def _none_allowed(members: int, percent: float) -> str:
    """A definition the ceiling lets monitoring hold nothing of says so, and what would allow one."""
    if monitoring_hold_limit(members, percent) > 0:
        return ""
    if percent <= 0:
        return "; 0% turns monitoring holds off"
    return "; a one-node definition is held by monitoring only at 100%"
