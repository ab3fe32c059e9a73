"""Service replicas: `replicas: N` runs the service as N stages `web[1]` .. `web[N]`, like a task array, each with its
FB_TASK_ID, all behind the service's endpoints. Replicas share a host, so replica i serves each declared port plus
i - 1, told in FB_PORT_<NAME>; its readiness probe on a declared port shifts the same way."""

from __future__ import annotations

from domain.fuzzfile.schema import Service


def replica_count(service: Service) -> int:
    """The pool's stages: `replicas`, or with an autoscaler the most it may grow to (`max-replicas`)."""
    scaler = service.autoscaler
    if scaler is not None:
        return max(scaler.max_replicas or 1, scaler.min_replicas or 1, service.replicas or 1)
    return service.replicas or 1


def replica_offset(stage: str) -> int:
    """0 for a lone service (`web`) or its first replica (`web[1]`); i - 1 for `web[i]`."""
    _, bracket, tail = stage.partition("[")
    if not bracket or not tail.endswith("]") or not tail[:-1].isdecimal():
        return 0
    return max(int(tail[:-1]) - 1, 0)


def replica_port(port: int, stage: str) -> int:
    """Where replica `stage` serves a declared `port` (0, an unknown port, stays 0)."""
    return port + replica_offset(stage) if port else 0


def port_env(ports: dict[str, int], task_id: int) -> dict[str, str]:
    """FB_PORT_<NAME> of each declared port (name -> port), for replica `task_id`."""
    return {f"FB_PORT_{name.upper().replace('-', '_')}": str(port + task_id - 1) for name, port in ports.items()}
