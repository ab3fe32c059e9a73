"""NVLink domains: the nodes a multinode GPU job runs on are all in one (the `nvidia.com/gpu.clique` annotation a node
registers with: NVIDIA's GPU clique id, the same label its GPU operator puts on Kubernetes nodes), and the IMEX
channel each domain's ranks use (`roving.io/imex-channel`, else channel 0).

Only multinode jobs that ask for devices are kept together: NVLink and IMEX join GPUs across nodes, and a CPU-only
job gains nothing from one domain. Nodes that carry no clique form one domain of their own ("(none)"), so a cluster
without NVLink places as it always did, and no job mixes NVLink nodes with nodes outside every domain.
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

NVLINK_DOMAIN = "nvidia.com/gpu.clique"
IMEX_CHANNEL = "roving.io/imex-channel"
NO_DOMAIN = "(none)"


def kept_together(a: Any) -> bool:
    """Whether a request's nodes must share one NVLink domain."""
    return a.nodes > 1 and bool(a.devices)


def domain_of(view: Any) -> str:
    return view.annotations.get(NVLINK_DOMAIN) or NO_DOMAIN


def together(fitting: Iterable[Any], a: Any) -> list[Any] | None:
    """The first `a.nodes` slots of `fitting` (in its order) that may run it together: any, or for a job kept
    together the first domain to gather enough; None when none does."""
    groups: dict[str, list[Any]] = {}
    apart = not kept_together(a)
    for slot in fitting:
        group = groups.setdefault(NO_DOMAIN if apart else domain_of(slot.view), [])
        group.append(slot)
        if len(group) == a.nodes:
            return group
    return None


def per_domain(fitting: Iterable[Any]) -> dict[str, int]:
    """How many of these slots each domain has, domains by name."""
    counts: dict[str, int] = {}
    for slot in fitting:
        counts[domain_of(slot.view)] = counts.get(domain_of(slot.view), 0) + 1
    return dict(sorted(counts.items()))


def shortage_text(counts: dict[str, int], wanted: int, when: str) -> str:
    """`no NVLink domain has 2 nodes that could hold it even when idle (clique-a: 1, clique-b: 1)`."""
    listed = ", ".join(f"{name}: {count}" for name, count in list(counts.items())[:8]) or "no nodes"
    more = f" and {len(counts) - 8} more" if len(counts) > 8 else ""
    return f"no NVLink domain ({NVLINK_DOMAIN}) has {wanted} nodes that could hold it {when} ({listed}{more})"


def imex_channel(annotations: dict[str, str]) -> int | None:
    """The IMEX channel a node's domain uses: its annotation, 0 on a node in a domain, None outside every domain."""
    if not annotations.get(NVLINK_DOMAIN):
        return None
    raw = annotations.get(IMEX_CHANNEL, "0")
    return int(raw) if raw.isdigit() and int(raw) < 2048 else 0  # the IMEX driver's channel ids are 0-2047
