"""Service-only rules: ports, endpoints, probes, replicas and their autoscaler, and the policy services do not have."""

from __future__ import annotations

import re

from domain.fuzzfile.autoscaler import check_autoscaler
from domain.fuzzfile.blocks import ServiceNetwork
from domain.fuzzfile.decode import join
from domain.fuzzfile.limits import MAX_PROBE_SECONDS, MAX_PROBE_THRESHOLD, MAX_REPLICAS, bounded
from domain.fuzzfile.replicas import replica_count
from domain.fuzzfile.restart import check_restart
from domain.fuzzfile.schema import Probe, Problem, Service

ENDPOINT_NAME = re.compile(r"^[a-z0-9_-]+$")
ENDPOINT_PROTOCOLS = ("http", "https")
ENDPOINT_TYPES = ("path", "subdomain")
SCOPES = ("user", "group", "organization", "public")
PORT_PROTOCOLS = ("tcp", "udp")


def check_service(service: Service, path: str) -> tuple[list[Problem], list[Problem]]:
    """(errors, warnings) for the keys only services have."""
    errors: list[Problem] = []
    warnings: list[Problem] = []
    restart_errors, restart_warnings = check_restart(service, path)
    errors += restart_errors
    warnings += restart_warnings
    bounded(errors, join(path, "replicas"), service.replicas, 1, MAX_REPLICAS, "replicas")
    if service.network is not None:
        ports = _check_ports(service, service.network, join(path, "network"), errors)
        _check_endpoints(service.network, join(path, "network"), ports, errors)
    if service.readiness_probe is not None:
        _check_probe(service.readiness_probe, join(path, "readiness-probe"), errors)
    if service.roving_liveness_probe is not None:
        _check_probe(service.roving_liveness_probe, join(path, "roving-liveness-probe"), errors)
    network = service.network
    errors += check_autoscaler(service, path, network is not None and any(e.persistent for e in network.endpoints or []))
    return errors, warnings


def _check_ports(service: Service, network: ServiceNetwork, path: str, errors: list[Problem]) -> set[str]:
    names: set[str] = set()
    for index, port in enumerate(network.ports or []):
        where = f"{path}.ports[{index}]"
        if port.name in names:
            errors.append(Problem(f"{where}.name", f"port name `{port.name}` is used twice"))
        names.add(port.name)
        if not 1 <= port.port <= 65535:
            errors.append(Problem(f"{where}.port", "port must be between 1 and 65535"))
        if port.protocol not in PORT_PROTOCOLS:
            errors.append(Problem(f"{where}.protocol", "port protocol must be tcp or udp"))
    _check_replica_ports(service, network, path, errors)
    return names


def _check_replica_ports(service: Service, network: ServiceNetwork, path: str, errors: list[Problem]) -> None:
    """Replica i serves each declared port + i - 1: those ranges must stay below 65536 and apart."""
    count = replica_count(service)
    if count < 2 or not 1 <= count <= MAX_REPLICAS:
        return
    taken: dict[int, str] = {}
    for index, port in enumerate(network.ports or []):
        where = f"{path}.ports[{index}].port"
        if not 1 <= port.port <= 65535:
            continue
        if port.port + count - 1 > 65535:
            errors.append(Problem(where, f"with {count} replicas this port needs {port.port}..{port.port + count - 1}, "
                                         "past 65535 (replica i serves the port + i - 1)"))
        clash = next((taken[p] for p in range(port.port, port.port + count) if p in taken), None)
        if clash is not None:
            errors.append(Problem(where, f"with {count} replicas its ports {port.port}..{port.port + count - 1} "
                                         f"overlap those of port `{clash}` (replica i serves each port + i - 1)"))
        taken.update(dict.fromkeys(range(port.port, port.port + count), port.name))


def _check_endpoints(network: ServiceNetwork, path: str, ports: set[str], errors: list[Problem]) -> None:
    for index, endpoint in enumerate(network.endpoints or []):
        where = f"{path}.endpoints[{index}]"
        if not ENDPOINT_NAME.match(endpoint.name):
            errors.append(Problem(f"{where}.name", "endpoint names hold only lowercase letters, digits, - and _"))
        if endpoint.port_name not in ports:
            known = ", ".join(sorted(ports)) or "none are defined"
            errors.append(Problem(f"{where}.port-name", f"no port is named `{endpoint.port_name}` (ports: {known})"))
        if endpoint.protocol not in ENDPOINT_PROTOCOLS:
            errors.append(Problem(f"{where}.protocol", "endpoint protocol must be http or https"))
        if endpoint.type not in ENDPOINT_TYPES:
            errors.append(Problem(f"{where}.type", "endpoint type must be path or subdomain"))
        if endpoint.scope not in SCOPES:
            errors.append(Problem(f"{where}.scope", "endpoint scope must be user, group, organization or public"))


def _check_probe(probe: Probe, path: str, errors: list[Problem]) -> None:
    actions = [a for a in (probe.exec, probe.http_get, probe.tcp_socket) if a is not None]
    if len(actions) != 1:
        errors.append(Problem(path, "a probe has exactly one of exec, http-get or tcp-socket"))
    for key in ("initial_delay_seconds", "period_seconds", "timeout_seconds"):
        value = getattr(probe, key)
        if isinstance(value, float):  # the struct takes fractions for the agent; a Fuzzfile writes whole seconds
            errors.append(Problem(f"{path}.{key.replace('_', '-')}", "expected a whole number, got a number"))
            continue
        bounded(errors, f"{path}.{key.replace('_', '-')}", value, 0, MAX_PROBE_SECONDS, "a probe time", "s")
    for key in ("success_threshold", "failure_threshold"):
        value = getattr(probe, key)
        bounded(errors, f"{path}.{key.replace('_', '-')}", value, 1, MAX_PROBE_THRESHOLD, "a threshold")
    for action in (probe.http_get, probe.tcp_socket):
        if action is not None and not 1 <= action.port <= 65535:
            errors.append(Problem(f"{path}.port", "probe port must be between 1 and 65535"))
