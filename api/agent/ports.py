"""What a service's readiness says of its ports: the TCP ports its own processes listen on, read when it becomes
ready and watched while it serves, so its endpoints follow a port it opens late or gives up.

The endpoint proxy forwards only to a port in this list (domain/endpoint_reach.py): a port the Fuzzfile declares
but the service never bound may be anyone's. A service with no readiness probe is reported ready as it starts,
often before it listens; the watch reports it again once it does.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

from adapters.listening import proxy_addresses
from api.agent.slots import Slot

CHECK_SECONDS = 2.0  # how stale a ready service's ports may be in its endpoints


async def listening_of(slot: Slot, address: str) -> list[int]:
    """The ports the slot's processes listen on now at `address`, where the proxy reaches the node (off the loop: it
    resolves the address and reads /proc)."""
    return list(await asyncio.to_thread(lambda: slot.running.listening_ports(proxy_addresses(address))))


class PortWatch:
    """Every CHECK_SECONDS, each ready service whose listening ports changed is reported ready again with them."""

    def __init__(self, report: Callable[[Slot, list[int]], Awaitable[None]], address: str,
                 every: float = CHECK_SECONDS) -> None:
        self.report, self.address, self.every, self.next_check = report, address, every, 0.0

    async def check(self, slots: dict[str, Slot]) -> None:
        if time.monotonic() < self.next_check:
            return
        self.next_check = time.monotonic() + self.every
        for slot in list(slots.values()):
            if slot.spec.kind != "service" or slot.listening is None or slot.fenced:
                continue
            now = await listening_of(slot, self.address)
            if now != slot.listening and slot.listening is not None:
                await self.report(slot, now)
