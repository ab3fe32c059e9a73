"""A service's listening ports count only at the address the endpoint proxy will use (issue 39, item 4)."""

from __future__ import annotations

import socket
import subprocess
import sys
import time

import pytest

from adapters.listening import listening_ports, proxy_addresses
from adapters.nats_server import free_port, free_ports
from tests.unit.agent.fake_api import A2, FakeApi
from tests.unit.agent.test_agent_loop import assignment, drive, port_of

LISTENER = ("import socket, sys, time\n"
            "family = socket.AF_INET6 if ':' in sys.argv[1] else socket.AF_INET\n"
            "s = socket.socket(family); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)\n"
            "s.bind((sys.argv[1], int(sys.argv[2]))); s.listen(); print('up', flush=True); time.sleep(30)\n")
LOOPBACK = frozenset({"127.0.0.1"})


def has_ipv6() -> bool:
    try:
        with socket.socket(socket.AF_INET6) as s:
            s.bind(("::1", 0))
        return True
    except OSError:
        return False


class Listener:
    """A process listening on address:port, as a service's process would."""

    def __init__(self, address: str, port: int) -> None:
        self.proc = subprocess.Popen([sys.executable, "-c", LISTENER, address, str(port)], stdout=subprocess.PIPE)
        assert self.proc.stdout is not None and self.proc.stdout.readline() == b"up\n"

    def __enter__(self) -> int:
        return self.proc.pid

    def __exit__(self, *exc: object) -> None:
        self.proc.kill()
        self.proc.wait()
        if self.proc.stdout is not None:
            self.proc.stdout.close()


def test_a_service_listening_on_another_loopback_address_does_not_hold_the_port_at_the_proxys_address():
    port = free_port()
    with Listener("127.0.0.2", port) as service:
        assert listening_ports([service], LOOPBACK) == ()


def test_a_service_listening_on_the_proxys_address_or_the_wildcard_holds_its_port():
    first, second = free_ports(2)
    with Listener("127.0.0.1", first) as exact, Listener("0.0.0.0", second) as wildcard:
        assert listening_ports([exact], LOOPBACK) == (first,)
        assert listening_ports([wildcard], LOOPBACK) == (second,)


def test_a_port_another_process_also_listens_on_at_the_proxys_address_is_not_the_services():
    """Two sockets sharing a port (SO_REUSEPORT, same uid): the kernel may hand the proxy's connection to either."""
    port = free_port()
    with Listener("0.0.0.0", port) as service, Listener("127.0.0.1", port):
        assert listening_ports([service], LOOPBACK) == ()


@pytest.mark.skipif(not has_ipv6(), reason="no IPv6 loopback on this machine")
def test_an_ipv6_listener_holds_the_port_only_at_ipv6_addresses_it_covers():
    port = free_port()
    with Listener("::1", port) as service:
        assert listening_ports([service], LOOPBACK) == ()
        assert listening_ports([service], frozenset({"::1"})) == (port,)
    with Listener("::", port) as dual_stack:
        assert listening_ports([dual_stack], frozenset({"127.0.0.1", "::1"})) == (port,)


def test_an_address_that_does_not_resolve_holds_no_port():
    port = free_port()
    with Listener("0.0.0.0", port) as service:
        assert listening_ports([service], proxy_addresses("no-such-host.invalid")) == ()
        assert listening_ports([service], proxy_addresses("")) == ()


def test_the_agent_reports_no_port_for_a_service_bound_beside_the_nodes_address(tmp_path):
    """The node registered 127.0.0.1: a service on 127.0.0.2:P must not send the proxy to whatever holds
    127.0.0.1:P (a root-only loopback server, another tenant's service, the API itself)."""
    port = free_port()
    script = (f"exec {sys.executable} -c \"import socket, time; s = socket.socket(); "
              f"s.bind(('127.0.0.2', {port})); s.listen(); time.sleep(30)\"")
    with FakeApi() as api:  # no probe: ready at once, then reported again whenever its ports change (every 2 s)
        api.start = [assignment(A2, kind="service", script=script, ports=[port_of(port)])]
        started = time.monotonic()
        drive(api, tmp_path, until=lambda: time.monotonic() - started > 5)
    ready = [r for r in api.reports if r["event"] == "ready"]
    assert ready and all(r["listening"] == [] for r in ready)
