"""Which TCP ports a job's own processes listen on, read from /proc: the evidence a service's readiness carries.

A service's Fuzzfile declares its ports, but a declaration proves nothing: the port may be free, or held by another
tenant's service or by the control plane itself. The agent reports what the allocation's processes really bound
(a listening socket among their open files), so the endpoint proxy reaches a service only at a port it holds.

Only listeners in the agent's own network namespace count: the proxy reaches the node's network, and a service in
a namespace of its own (network isolation) is not there, whatever it binds inside.
"""

from __future__ import annotations

import os
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


def listeners(table: str) -> dict[int, int]:
    """inode -> port of every listening socket in one /proc/net/tcp-style table."""
    found: dict[int, int] = {}
    for line in table.splitlines()[1:]:
        fields = line.split()
        if len(fields) > 9 and fields[3] == LISTEN:
            found[int(fields[9])] = int(fields[1].rpartition(":")[2], 16)
    return found


def listening_ports(pids: Iterable[int], proc: Path = PROC) -> tuple[int, ...]:
    """The TCP ports any of `pids` listens on in this process's network namespace, sorted."""
    own = _namespace(os.getpid(), proc)
    inodes: set[int] = set()
    for pid in pids:
        if _namespace(pid, proc) == own:
            inodes |= socket_inodes(pid, proc)
    if not inodes:
        return ()
    ports: set[int] = set()
    for name in TABLES:
        try:
            table = (proc / "net" / name).read_text()
        except OSError:
            continue
        ports.update(port for inode, port in listeners(table).items() if inode in inodes)
    return tuple(sorted(ports))


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
