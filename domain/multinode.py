"""Multinode jobs: what each rank is told about its peers, as a hostfile and FB_* (and torchrun's, MPI's) variables.

A multinode allocation is placed on N distinct nodes at once; its rank on a node is that node's position in the
placement (rank 0 leads). Every rank gets the same hostfile (the nodes' registered addresses, in rank order)
and the leader's address and port, so `mpirun --hostfile "$FB_HOSTFILE"` and `torchrun --nnodes "$FB_NNODES"
--node-rank "$FB_NODE_RANK" --master-addr "$FB_LEADER_ADDR" --master-port "$FB_LEADER_PORT"` can start.
"""
from __future__ import annotations

from uuid import UUID

import msgspec

RANK_REASON = "rank "  # how a multinode allocation's failure names the rank that failed first
HOSTFILE = "hostfile"  # in the stage's work directory on every node
LEADER_PORT_BASE, LEADER_PORT_SPAN = 29500, 1000  # torch.distributed's customary port, then a spread
IMEX_CHANNEL_DIR = "/dev/nvidia-caps-imex-channels"  # where the NVIDIA driver makes channel<N> device nodes


class Peers(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """One rank's view of its allocation: its rank and every rank's node address, in rank order; on a node in an
    NVLink domain, the domain and the IMEX channel its ranks share (domain.scheduler.nvlink)."""

    rank: int
    hosts: tuple[str, ...]
    port: int
    procs_per_node: int = 1
    implementation: str = ""  # openmpi | mpich | gasnet, or "" when the Fuzzfile names none
    nvlink_domain: str = ""
    imex_channel: int | None = None


def rank_reason(rank: int, exit_code: int) -> str:
    return f"{RANK_REASON}{rank} exit {exit_code}"


def leader_port(allocation_id: UUID | str) -> int:
    """A port derived from the allocation, so two multinode jobs sharing a leader node rarely ask for the same one."""
    return LEADER_PORT_BASE + UUID(str(allocation_id)).int % LEADER_PORT_SPAN


def hostfile(peers: Peers) -> str:
    """One line per rank's node, in the syntax of the job's MPI (plain addresses otherwise)."""
    slots = peers.procs_per_node
    if peers.implementation == "openmpi":
        lines = [f"{host} slots={slots}" for host in peers.hosts]
    elif peers.implementation == "mpich":
        lines = [f"{host}:{slots}" for host in peers.hosts]
    else:
        lines = list(peers.hosts)
    return "\n".join(lines) + "\n"


def environment(peers: Peers, hostfile_path: str) -> dict[str, str]:
    """The variables every rank gets: Fuzzball's FB_* names, and torchrun's and MPI launchers' own."""
    nodes, leader = len(peers.hosts), peers.hosts[0]
    env = {
        "FB_NODE_RANK": str(peers.rank), "FB_NNODES": str(nodes), "FB_HOSTFILE": hostfile_path,
        "FB_LEADER_ADDR": leader, "FB_LEADER_PORT": str(peers.port),
        "FB_PROCS_PER_NODE": str(peers.procs_per_node), "FB_NODES": ",".join(peers.hosts),
        "NODE_RANK": str(peers.rank), "NNODES": str(nodes), "MASTER_ADDR": leader, "MASTER_PORT": str(peers.port),
        "WORLD_SIZE": str(nodes * peers.procs_per_node),
    }
    if peers.implementation:
        env["FB_MPI_IMPLEMENTATION"] = peers.implementation
    if peers.imex_channel is not None:  # NVIDIA's container toolkit reads NVIDIA_IMEX_CHANNELS to give the device
        env.update(NVIDIA_IMEX_CHANNELS=str(peers.imex_channel), FB_IMEX_CHANNEL=str(peers.imex_channel),
                   FB_IMEX_CHANNEL_DEVICE=f"{IMEX_CHANNEL_DIR}/channel{peers.imex_channel}",
                   FB_NVLINK_DOMAIN=peers.nvlink_domain)
    return env
