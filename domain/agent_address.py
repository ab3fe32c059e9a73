"""A node agent's registered address: an IP literal or a host name, nothing a URL could read as a path, a port, a
user or a fragment, because the control plane builds URLs from it (`GET /v4/metrics/node/{node}` fetches
`http://ADDRESS:PORT/metrics`). Checked when the agent registers and again before each use: events written before the
check may hold anything."""

from __future__ import annotations

import ipaddress
import re

from domain.agent_protocol import MAX_ADDRESS

_LABEL = re.compile(r"[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?")


def address_problem(address: str) -> str | None:
    """Why `address` is not an IP literal or a host name (None when it is one, or empty: no address)."""
    if not address:
        return None
    if len(address) > MAX_ADDRESS:
        return f"an address has at most {MAX_ADDRESS} characters, got {len(address)}"
    if _ip(address) is not None:
        return None
    labels = address.removesuffix(".").split(".")
    if all(_LABEL.fullmatch(label) for label in labels):
        return None
    return (f"{address[:80]!r} is not an IP address or a host name (letters, digits, '-', '_' and dots; "
            f"no port, path, user or scheme)")


def url_host(address: str) -> str:
    """`address` as the host part of a URL: an IPv6 literal in brackets. ValueError when it is not an address."""
    problem = "no address" if not address else address_problem(address)
    if problem is not None:
        raise ValueError(problem)
    ip = _ip(address)
    return f"[{ip.compressed}]" if isinstance(ip, ipaddress.IPv6Address) else address


def _ip(address: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    if "%" in address:  # a zone id (`fe80::1%eth0`) reads as a URL escape
        return None
    try:
        return ipaddress.ip_address(address)
    except ValueError:
        return None
