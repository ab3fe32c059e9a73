"""Where an endpoint's requests may go: the ready replicas' order, and the proof each one's port is its own.

A readiness report carries the TCP ports the service's own processes listen on, as its agent saw them on the node
(adapters/listening.py). A target whose port is not among them may be anyone's (another tenant's service, the
control plane itself): the proxy refuses it with the reason `refusal` gives.
"""

from __future__ import annotations


def event_ports(listening: tuple[int, ...] | None) -> list[int] | None:
    """Ports as an event stores them (a list), sorted; None stays "not said"."""
    return None if listening is None else sorted({int(p) for p in listening})


def kept(ports: list[int] | tuple[int, ...] | None) -> tuple[int, ...] | None:
    return None if ports is None else tuple(ports)


def refusal(replica: str, port: int, listening: tuple[int, ...] | None) -> str:
    """Why the proxy must not forward to `replica` at `port`, or "" when its own processes listen there."""
    if listening is None:
        return (f"{replica}: its agent did not say which ports the service listens on (an agent older than the "
                f"control plane?), so port {port} may be anyone's; restart the service under a current agent")
    if port not in listening:
        held = ", ".join(str(p) for p in listening) or "no port"
        return (f"{replica} does not listen on port {port} of its node (its processes listen on {held}); the proxy "
                f"reaches a service only at a port the service bound itself")
    return ""


def replica_order(stage: str) -> tuple[int, str]:
    """`web[2]` before `web[10]`: replicas by their FB_TASK_ID."""
    _, _, tail = stage.partition("[")
    return (int(tail[:-1]) if tail[:-1].isdecimal() else 0, stage)
