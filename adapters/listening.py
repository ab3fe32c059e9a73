"""Which TCP ports a job's own processes listen on, read from /proc: the evidence a service's readiness carries.

A service's Fuzzfile declares its ports, but a declaration proves nothing: the port may be free, or held by another
tenant's service or by the control plane itself. The agent reports what the allocation's processes really bound
(a listening socket among their open files), so the endpoint proxy reaches a service only at a port it holds.

Only listeners in the agent's own network namespace count: the proxy reaches the node's network, and a service in
a namespace of its own (network isolation) is not there, whatever it binds inside.

A port counts only at the address the proxy will use: the node's registered address, resolved as the agent resolves
it (`proxy_addresses`). Each such address must be one the allocation listens on (itself or its family's wildcard) and
one no other socket of the node listens on: a service on 127.0.0.2:P must not send the proxy to whatever holds
127.0.0.1:P, and a port another process shares (SO_REUSEPORT) is not the allocation's alone.
"""

from __future__ import annotations

import ipaddress
import os
import socket
from collections.abc import Iterable
from pathlib import Path

PROC = Path("/proc")
LISTEN = "0A"  # the TCP state column of /proc/net/tcp{,6}
TABLES = ("tcp", "tcp6")


def socket_inodes(pid: int, proc: Path = PROC) -> set[int]:
    """The inodes of the sockets `pid` holds open (none when it is gone or not ours to read)."""
    found: set[int] = set()
    try:
        names = os.listdir(proc / str(pid) / "fd")
    except OSError:
        return found
    for name in names:
        try:
            target = os.readlink(proc / str(pid) / "fd" / name)
        except OSError:
            continue
        if target.startswith("socket:["):
            found.add(int(target[8:-1]))
    return found


def listeners(table: str) -> dict[int, tuple[str, int]]:
    """inode -> (address, port) of every listening socket in one /proc/net/tcp-style table."""
    found: dict[int, tuple[str, int]] = {}
    for line in table.splitlines()[1:]:
        fields = line.split()
        if len(fields) > 9 and fields[3] == LISTEN:
            address, _, port = fields[1].rpartition(":")
            found[int(fields[9])] = (address_of(address), int(port, 16))
    return found


def address_of(hex_address: str) -> str:
    """The text of a /proc/net/tcp address: 32-bit words in the kernel's (little-endian) byte order."""
    raw = bytes.fromhex(hex_address)
    host_order = b"".join(raw[i:i + 4][::-1] for i in range(0, len(raw), 4))
    return str(ipaddress.ip_address(host_order))


def proxy_addresses(host: str) -> frozenset[str]:
    """The addresses a connection to `host` may go to (none when it does not resolve)."""
    if not host:
        return frozenset()
    try:
        infos = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError):
        return frozenset()
    return frozenset(str(ipaddress.ip_address(str(info[4][0]).partition("%")[0])) for info in infos)


def covers(bound: set[str], address: str) -> bool:
    """Whether a listener bound to one of `bound` takes connections to `address` (a dual-stack `::` takes IPv4)."""
    if address in bound:
        return True
    if ipaddress.ip_address(address).version == 6:
        return "::" in bound
    return bool(bound & {"0.0.0.0", "::", f"::ffff:{address}"})


def listening_ports(pids: Iterable[int], addresses: frozenset[str], proc: Path = PROC) -> tuple[int, ...]:
    """The TCP ports any of `pids` listens on, in this process's network namespace, at every one of `addresses`
    and with no other listener there, sorted."""
    own = _namespace(os.getpid(), proc)
    inodes: set[int] = set()
    for pid in pids:
        if _namespace(pid, proc) == own:
            inodes |= socket_inodes(pid, proc)
    if not inodes or not addresses:
        return ()
    ours: dict[int, set[str]] = {}
    others: dict[int, set[str]] = {}
    for inode, (address, port) in _all_listeners(proc).items():
        (ours if inode in inodes else others).setdefault(port, set()).add(address)
    return tuple(sorted(port for port, bound in ours.items()
                        if all(covers(bound, a) and not covers(others.get(port, set()), a) for a in addresses)))


def _all_listeners(proc: Path) -> dict[int, tuple[str, int]]:
    found: dict[int, tuple[str, int]] = {}
    for name in TABLES:
        try:
            found.update(listeners((proc / "net" / name).read_text()))
        except OSError:
            continue
    return found


def group_members(pgid: int, proc: Path = PROC) -> list[int]:
    """Processes in process group or session `pgid` (a job started as its own session leader), for a job with no
    cgroup to list its members."""
    found = []
    for entry in proc.iterdir():
        if not entry.name.isdecimal():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat.rpartition(")")[2].split()  # after the command name, which may hold spaces
        if len(fields) > 3 and (int(fields[2]) == pgid or int(fields[3]) == pgid):
            found.append(int(entry.name))
    return found


def _namespace(pid: int, proc: Path) -> str:
    try:
        return os.readlink(proc / str(pid) / "ns" / "net")
    except OSError:
        return ""
