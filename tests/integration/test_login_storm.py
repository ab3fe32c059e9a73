"""A storm of wrong-password logins, with production's hasher (scrypt, 128 MiB and ~0.35 s a hash): other tenants'
requests are not held up, and the process grows by at most what the login pool's hashes hold."""

from __future__ import annotations

import asyncio
import os
import threading
import time

import httpx

from api.composition.stack import password_hasher
from tests.unit.api.harness import JOB, PASSWORD, Api

STORM = 80
PAGE = os.sysconf("SC_PAGE_SIZE")


def resident() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * PAGE


class Peak(threading.Thread):
    """The process's largest resident size while it runs."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.peak, self.done = resident(), threading.Event()

    def run(self) -> None:
        while not self.done.wait(0.01):
            self.peak = max(self.peak, resident())


def test_eighty_wrong_password_logins_at_once_hold_no_other_request_and_bound_the_memory():
    api = Api()
    api.services.roving.tenancy.passwords = password_hasher()  # what `roving up` wires
    _, alice = api.organization_with_user("acme", "alice")
    gate = api.app.state.logins

    async def login(client: httpx.AsyncClient, n: int) -> int:
        answer = await client.post("/v4/auth/login", json={"username": f"guess{n}", "password": "Wrong-Kettle-42-Moon"})
        return answer.status_code

    async def scenario() -> tuple[list[int], list[float]]:
        # every guess from an address of its own: only the pool and its queue stand in the way, not the buckets
        clients = [httpx.AsyncClient(transport=httpx.ASGITransport(app=api.app, client=(f"10.9.{n // 250}.{n % 250}", 4000)),
                                     base_url="http://roving.test") for n in range(STORM)]
        user = httpx.AsyncClient(transport=httpx.ASGITransport(app=api.app), base_url="http://roving.test",
                                 headers={"Authorization": f"Bearer {alice}"})
        try:
            storm = [asyncio.create_task(login(client, n)) for n, client in enumerate(clients)]
            await asyncio.sleep(0.05)  # the storm is under way
            waits = []
            while not all(task.done() for task in storm) or not waits:
                began = time.monotonic()
                submitted = await user.post("/v4/workflows", json={"definition": JOB})
                waits.append(time.monotonic() - began)
                assert submitted.status_code == 201, submitted.text
            return [await task for task in storm], waits
        finally:
            for client in [*clients, user]:
                await client.aclose()

    before, peak = resident(), Peak()
    peak.start()
    try:
        statuses, waits = asyncio.run(scenario())
    finally:
        peak.done.set()
        peak.join()
    grew = peak.peak - before
    assert set(statuses) <= {401, 503} and statuses.count(401) >= gate.workers
    # before the login pool a submit waited 15.6-20.6 s behind the hashes; on a busy 2-core machine one may wait a
    # second for CPU (1.26 s was seen with other work running), which is not the storm holding it
    assert max(waits) < 5.0, f"another tenant's submit waited {max(waits):.2f}s during the storm"
    assert grew < gate.memory_bound + 96 * 2**20, f"the process grew by {grew / 2**20:.0f} MiB during the storm"
    print(f"storm of {STORM}: {statuses.count(401)} checked, {statuses.count(503)} refused at once; "
          f"{len(waits)} submits, slowest {max(waits) * 1000:.0f} ms; grew {grew / 2**20:.0f} MiB "
          f"(bound {gate.memory_bound / 2**20:.0f} MiB + 96)")


def test_a_spray_from_eighty_addresses_never_denies_other_accounts_their_right_password():
    """Issue 39: the spray kept everyone's correct login at 503 (one shared queue). Now alice (who signed in from her
    office before) and carol (signing in for the first time) get in while 80 addresses guess names."""
    api = Api()
    api.services.roving.tenancy.passwords = password_hasher()
    org_id, _ = api.organization_with_user("acme", "alice")
    body = {"username": "carol", "email": "carol@acme.org", "password": PASSWORD, "role": "user"}
    assert api.request("POST", f"/v4/organizations/{org_id}/users", api.admin, json=body).status_code == 201

    def client(address: str) -> httpx.AsyncClient:
        return httpx.AsyncClient(transport=httpx.ASGITransport(app=api.app, client=(address, 4000)),
                                 base_url="http://roving.test")

    async def login(address: str, username: str, password: str) -> int:
        async with client(address) as c:
            answer = await c.post("/v4/auth/login", json={"username": username, "password": password})
            return answer.status_code

    async def scenario() -> tuple[list[int], list[int]]:
        assert await login("192.0.2.10", "alice", PASSWORD) == 200  # before the spray, from her office
        spray = [asyncio.create_task(login(f"10.9.0.{n}", f"guess{n}", "Wrong-Kettle-42-Moon")) for n in range(STORM)]
        await asyncio.sleep(0.05)
        ours = list(await asyncio.gather(login("192.0.2.11", "alice", PASSWORD), login("198.51.100.4", "carol", PASSWORD)))
        return ours, list(await asyncio.gather(*spray))

    ours, spray = asyncio.run(scenario())
    assert ours == [200, 200], f"a right password during the spray answered {ours}"
    assert spray.count(401) <= 21 and set(spray) <= {401, 429, 503}  # one /24's burst, and its lane's room
