"""Password checks wait in their own pool, behind limits per address and account; refusals cost no hash."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from api.http.logins import Limits, LoginGate, TooManyLogins
from tests.unit.api.harness import PASSWORD, Api


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Hashes:
    """Stands in for a login: counts the checks that ran, and the most that ran at once."""

    def __init__(self, seconds: float = 0.0, fail: bool = True) -> None:
        self.seconds, self.fail, self.ran, self.running, self.most = seconds, fail, 0, 0, 0
        self.lock = threading.Lock()

    def __call__(self, *_: object) -> str:
        with self.lock:
            self.ran, self.running = self.ran + 1, self.running + 1
            self.most = max(self.most, self.running)
        time.sleep(self.seconds)
        with self.lock:
            self.running -= 1
        if self.fail:
            raise PermissionError("wrong password")
        return "ok"


async def attempt(gate: LoginGate, work: Hashes, account: str, address: str) -> int:
    """The answer's status: 200, 401 for a wrong password, or the gate's refusal."""
    try:
        await gate.check(account, address, work)
    except TooManyLogins as refused:
        return refused.status
    except PermissionError:
        return 401
    return 200


def test_an_address_past_its_burst_is_refused_429_without_a_hash_and_may_try_again_later():
    clock, work = Clock(), Hashes()
    gate = LoginGate(workers=1, address=Limits(burst=3, refill=5.0), clock=clock)
    statuses = [asyncio.run(attempt(gate, work, f"user{n}", "10.0.0.9")) for n in range(5)]
    assert statuses == [401, 401, 401, 429, 429] and work.ran == 3
    with pytest.raises(TooManyLogins) as refused:
        asyncio.run(gate.check("someone", "10.0.0.9", work))
    assert refused.value.retry_after == 5
    clock.now += 5
    assert asyncio.run(attempt(gate, work, "user9", "10.0.0.9")) == 401
    assert asyncio.run(attempt(gate, work, "user1", "10.0.0.10")) == 429  # the same /24: the same bucket
    assert asyncio.run(attempt(gate, work, "user1", "10.0.1.10")) == 401  # another network has its own


def test_an_account_has_one_check_at_a_time_and_its_own_limit_across_addresses():
    clock, slow = Clock(), Hashes(seconds=0.2)

    async def both() -> list[int]:
        return list(await asyncio.gather(attempt(gate, slow, "Bob", "10.0.0.1"), attempt(gate, slow, "bob ", "10.0.0.2")))

    gate = LoginGate(workers=2, account=Limits(burst=2, refill=60.0), clock=clock)
    assert sorted(asyncio.run(both())) == [401, 429] and slow.ran == 1
    assert asyncio.run(attempt(gate, slow, "bob", "10.0.0.3")) == 401
    assert asyncio.run(attempt(gate, slow, "bob", "10.0.0.4")) == 429  # two spent, from three addresses


def test_a_right_password_gives_the_account_its_attempt_back():
    gate = LoginGate(workers=1, account=Limits(burst=2, refill=60.0), clock=Clock())
    wrong, right = Hashes(), Hashes(fail=False)
    assert [asyncio.run(attempt(gate, w, "bob", "10.0.0.1")) for w in (wrong, right, right, right)] == [401, 200, 200, 200]


def test_checks_run_in_the_gates_own_pool_and_a_full_lane_is_a_503_at_once():
    work = Hashes(seconds=0.05)
    gate = LoginGate(workers=2, waiting=6)

    async def storm() -> list[int]:
        return list(await asyncio.gather(*(attempt(gate, work, f"u{n}", f"10.1.0.{n}") for n in range(20))))

    statuses = asyncio.run(storm())  # one check in the clean lane (one per prefix), six in the suspect lane
    assert statuses.count(401) == 7 and statuses.count(503) == 13
    assert work.most == 2 and gate.memory_bound == 2 * 128 * 2**20


def test_the_login_route_answers_429_with_retry_after_and_the_sign_in_form_says_so():
    api = Api()
    api.app.state.logins = LoginGate(workers=1, address=Limits(burst=2, refill=30.0))
    bad = {"username": "admin", "password": "Wrong-Kettle-42-Moon"}
    answers = [api.request("POST", "/v4/auth/login", json=bad) for _ in range(3)]
    assert [a.status_code for a in answers] == [401, 401, 429]
    assert answers[2].headers["retry-after"] == "30" and "too many logins from this address" in answers[2].json()["error"]
    form = api.request("POST", "/ui/login", data={"username": "admin", "password": PASSWORD})
    assert form.status_code == 429 and "Too many logins from this address" in form.text


class Login:
    """A login that fails unless the password is right, taking `seconds` as a hash does."""

    def __init__(self, passwords: dict[str, str], seconds: float) -> None:
        self.passwords, self.seconds = passwords, seconds

    def __call__(self, username: str, password: str) -> str:
        time.sleep(self.seconds)
        if self.passwords.get(username) != password:
            raise PermissionError("wrong password")
        return username


async def login(gate: LoginGate, work: Login, account: str, password: str, address: str) -> int:
    try:
        await gate.check(account, address, work, account, password)
    except TooManyLogins as refused:
        return refused.status
    except PermissionError:
        return 401
    return 200


@pytest.mark.parametrize("spread", ["one /24", "80 networks", "80 IPv6 networks"])
def test_a_spray_from_eighty_addresses_never_denies_the_right_password_of_an_account_it_does_not_target(spread):
    """Unauthenticated guesses at many names, from 80 addresses at once: alice, who signed in from her office before,
    and carol, signing in for the first time from hers, both get in while the spray waits in its own lane."""
    work = Login({"alice": "right-alice", "carol": "right-carol"}, seconds=0.02)
    gate = LoginGate(workers=1)
    sprayers = {"one /24": [f"10.9.0.{n}" for n in range(80)], "80 networks": [f"10.9.{n}.7" for n in range(80)],
                "80 IPv6 networks": [f"2001:db8:0:{n:x}::7" for n in range(80)]}[spread]

    async def scenario() -> tuple[list[int], list[int]]:
        assert await login(gate, work, "alice", "right-alice", "192.0.2.10") == 200  # yesterday, from her office
        rounds: list[int] = []
        for turn in range(3):  # the spray goes on; each of its rounds is 80 guesses at once
            spray = [asyncio.create_task(login(gate, work, f"guess{turn}-{n}", "Wrong-Kettle-42-Moon", address))
                     for n, address in enumerate(sprayers)]
            await asyncio.sleep(0.01)
            ours = await asyncio.gather(login(gate, work, "alice", "right-alice", "192.0.2.11"),
                                        login(gate, work, "carol", "right-carol", f"198.51.100.{turn}"))
            rounds.extend(ours)
            statuses = await asyncio.gather(*spray)
        return rounds, list(statuses)

    ours, spray = asyncio.run(scenario())
    assert ours == [200] * 6
    assert 503 in spray or 429 in spray  # the spray itself was held back


def test_a_spray_from_fresh_ipv6_64s_of_one_48_is_limited_as_one_network():
    """A /48 holds 65,536 /64s, each its own bucket: guesses from a fresh one each time are still one site's."""
    clock, work = Clock(), Hashes()
    gate = LoginGate(workers=1, clock=clock)
    statuses = [asyncio.run(attempt(gate, work, f"user{n}", f"2001:db8:7:{n:x}::1")) for n in range(100)]
    assert statuses.count(401) == 60 and statuses[60:] == [429] * 40 and work.ran == 60
    assert asyncio.run(attempt(gate, work, "user1", "2001:db8:8::1")) == 401  # another /48 has its own


def test_fresh_ipv6_64s_of_one_48_take_one_place_in_the_clean_lane_not_one_each():
    work = Hashes(seconds=0.05)
    gate = LoginGate(workers=1, waiting=2)

    async def storm() -> list[int]:
        return list(await asyncio.gather(*(attempt(gate, work, f"u{n}", f"2001:db8:7:{n:x}::1") for n in range(20))))

    statuses = asyncio.run(storm())  # one in the clean lane (one per /48), two in the suspect lane, the rest 503
    assert statuses.count(401) == 3 and statuses.count(503) == 17
