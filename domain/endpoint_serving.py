"""What an endpoint serves, read off its state: the ready replicas of its bound service, which of their targets the
proxy may reach (a port its own service listens on) and why not, and why nothing is served at all."""

from __future__ import annotations

from typing import TYPE_CHECKING
from uuid import UUID

from domain.endpoint_reach import refusal, replica_order
from domain.endpoint_values import Binding

if TYPE_CHECKING:
    from domain.endpoint import Pending


class Serving:
    """The read side of domain.endpoint's Endpoint aggregate, which holds (and changes) this state."""

    name: str
    binding: Binding | None
    pending: Pending | None
    deleted: bool
    tracks_replicas: bool
    unbound_reason: str

    @property
    def members(self) -> dict[str, str]:
        """Ready replicas of the bound service: stage name -> host:port (made lazily for restored snapshots)."""
        return self.__dict__.setdefault("_members", {})

    @property
    def unready(self) -> dict[str, str]:
        """Replicas of the bound service out of the endpoint: stage name -> why."""
        return self.__dict__.setdefault("_unready", {})

    @property
    def listening(self) -> dict[str, tuple[int, ...] | None]:
        """Ready replicas: stage name -> the ports its own processes listen on, as its agent last said."""
        return self.__dict__.setdefault("_listening", {})

    def reachable_targets(self) -> list[str]:
        """The ready targets the proxy may reach: each one's port is one its own service bound on its node."""
        return [target for target, refusal in self._checked() if not refusal]

    def unreachable_reason(self) -> str:
        """Why no ready target may be reached (the proxy's 502), "" when one may."""
        refusals = [refusal for _, refusal in self._checked()]
        return "" if not refusals or not all(refusals) else "; ".join(refusals)

    def _checked(self) -> list[tuple[str, str]]:
        """(target, why the proxy must not reach it or "") for every ready target."""
        if self.binding is None or self.deleted:
            return []
        if not self.tracks_replicas:
            return [(self.binding.target, refusal(self.binding.service, self.binding.port, self.binding.listening))]
        found = []
        for name in sorted(self.members, key=replica_order):
            target = self.members[name]
            port = int(target.rpartition(":")[2] or 0)
            found.append((target, refusal(name, port, self.listening.get(name))))
        return found

    def serving_targets(self) -> list[str]:
        """host:port of every ready replica of the bound service, in replica order."""
        if self.deleted or self.binding is None:
            return []
        if not self.tracks_replicas:
            return [self.binding.target]
        return [self.members[name] for name in sorted(self.members, key=replica_order)]

    def serving_target(self) -> Binding | None:
        """The binding requests go to while one of its replicas is ready, or None (then `not_serving_reason` is
        the 503's message)."""
        return self.binding if self.serving_targets() else None

    def not_serving_reason(self) -> str:
        if self.deleted:
            return f"endpoint {self.name} was deleted"
        if self.binding is not None and self.serving_targets():
            return ""
        if self.binding is not None:
            why = "; ".join(f"{name}: {reason}" for name, reason in sorted(self.unready.items())) or "no replica is ready"
            return f"endpoint {self.name}: service {self.binding.service} is not ready ({why})"
        if self.pending is not None:
            return (f"endpoint {self.name} is waiting for workflow {self.pending.workflow_id} service "
                    f"{self.pending.service} to become ready")
        return f"endpoint {self.name} has no ready service: {self.unbound_reason}"

    def binding_target(self) -> str:
        return self.binding.target if self.binding is not None else ""

    def _is_bound(self, workflow_id: UUID, service: str) -> bool:
        return self.binding is not None and (self.binding.workflow_id, self.binding.service) == (workflow_id, service)
