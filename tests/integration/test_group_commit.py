"""Group commit against a real nats-server: commits waiting together share one atomic batch, each learns its
own sequences, and a refused or unacknowledged batch costs no neighbour its commit and stores nothing twice. A
commit of one message goes out at once as a plain publish, even while a batch is in flight, yet never ahead of an
earlier commit of its aggregate."""

from __future__ import annotations

import asyncio
from collections import Counter

import pytest
from eventsourcing.persistence import IntegrityError
from prometheus_client import REGISTRY

from domain.app.errors import WriteRace
from domain.app.unit_of_work import UnitOfWork
from tests.integration.ledger import Ledger, Ledgers, env_for
from tests.integration.test_log_under_failure import all_notifications


@pytest.fixture
def app(nats_url: str, request: pytest.FixtureRequest):
    env = env_for(nats_url, request.node.name[5:30].replace("_", "-"))
    ledgers = Ledgers(env=env)
    ledgers.test_env = env  # another writer on the same log
    yield ledgers
    ledgers.close()


def ledger_with(entries: int) -> Ledger:
    ledger = Ledger(owner="o")
    for amount in range(entries):
        ledger.enter(amount)
    return ledger


def stored(app: Ledgers, aggregate: Ledger) -> list:
    return [app.mapper.to_stored_event(e) for e in aggregate.collect_events()]


def commit_together(app: Ledgers, *commits: list) -> list:
    """Every commit handed to the committer before any is published (one loop turn): results or errors."""
    committer = app.recorder.committer

    async def together():
        return await asyncio.gather(*(committer.commit(c, None) for c in commits), return_exceptions=True)

    return app.recorder.connection.loop.run(together())


def publishes(app: Ledgers) -> tuple[float, float]:
    labels = {"stream": app.recorder.committer.stream}
    return (REGISTRY.get_sample_value("roving_log_batches_total", labels) or 0.0,
            REGISTRY.get_sample_value("roving_log_commits_total", labels) or 0.0)


def at(app: Ledgers, seqs: list[int]) -> list[tuple]:
    return [(n.originator_id, n.originator_version)
            for s in seqs for n in app.recorder.select_notifications(start=s, limit=1)]


def test_commits_waiting_together_share_one_batch_and_each_gets_its_own_sequences(app: Ledgers):
    ledgers = [ledger_with(n) for n in (0, 3, 1, 5, 2)]
    batches, commits = publishes(app)
    results = commit_together(app, *(stored(app, ledger) for ledger in ledgers))
    assert publishes(app) == (batches + 1, commits + 5)
    for ledger, seqs in zip(ledgers, results, strict=True):
        assert at(app, seqs) == [(ledger.id, version) for version in range(1, ledger.version + 1)]
        assert app.repository.get(ledger.id).entries == ledger.entries


def stale(app: Ledgers) -> tuple[object, Ledger]:
    """A ledger this app loaded, then another writer advanced: saving this app's copy is a conflict."""
    contested = app.open_with_entries(0)
    mine = app.repository.get(contested)
    other = Ledgers(env=app.test_env)
    try:
        theirs = other.repository.get(contested)
        theirs.enter(99)
        other.save(theirs)
    finally:
        other.close()
    mine.enter(1)
    return contested, mine


def test_a_conflicting_commit_fails_alone_and_its_neighbours_land(app: Ledgers):
    contested, mine = stale(app)
    mine.enter(2)  # two events: it shares the batch
    fresh = [ledger_with(2) for _ in range(3)]
    batches, commits = publishes(app)
    results = commit_together(app, stored(app, fresh[0]), stored(app, mine), *(stored(app, f) for f in fresh[1:]))
    assert publishes(app) == (batches + 1, commits + 4)  # they were tried together, and the batch was refused
    assert isinstance(results[1], IntegrityError)
    assert [app.repository.get(f.id).entries for f in fresh] == [[0, 1]] * 3
    assert app.repository.get(contested).entries == [99]
    assert max(Counter((n.originator_id, n.originator_version) for n in all_notifications(app)).values()) == 1


def test_a_slow_retry_holds_up_no_commit_of_another_aggregate(app: Ledgers, monkeypatch: pytest.MonkeyPatch):
    _, mine = stale(app)
    committer = app.recorder.committer
    reconcile = committer._reconcile

    async def slow_reconcile(*args, **kwargs):
        await asyncio.sleep(1.5)
        return await reconcile(*args, **kwargs)

    monkeypatch.setattr(committer, "_reconcile", slow_reconcile)

    async def timed(events: list, delay: float = 0.0) -> tuple[str, float]:
        started = asyncio.get_running_loop().time()
        await asyncio.sleep(delay)
        try:
            await committer.commit(events, None)
            outcome = "committed"
        except IntegrityError:
            outcome = "conflict"
        return outcome, asyncio.get_running_loop().time() - started

    async def three():  # the stale one and a bystander share a batch; a latecomer comes during the retries
        return await asyncio.gather(timed(stored(app, mine)), timed(stored(app, ledger_with(1))),
                                    timed(stored(app, ledger_with(1)), delay=0.3))

    (conflict, slow), (bystander, quick), (latecomer, later) = app.recorder.connection.loop.run(three())
    assert conflict == "conflict" and slow >= 1.5
    assert bystander == latecomer == "committed" and quick < 1.0 and later < 1.2


def test_two_commits_of_one_aggregate_go_in_separate_batches_in_order(app: Ledgers):
    ledger, bystander = ledger_with(1), ledger_with(1)
    opened = stored(app, ledger)
    ledger.enter(7)
    ledger.enter(8)
    entered = stored(app, ledger)
    batches, commits = publishes(app)
    first, second, third = commit_together(app, opened, entered, stored(app, bystander))
    assert publishes(app) == (batches + 2, commits + 3)
    assert second[0] > first[0] and at(app, first + second) == [(ledger.id, v) for v in (1, 2, 3, 4)]
    assert app.repository.get(ledger.id).entries == [0, 7, 8]
    assert at(app, third) == [(bystander.id, 1), (bystander.id, 2)]


def test_a_lost_batch_ack_is_found_landed_by_each_commit_and_nothing_is_stored_twice(
        app: Ledgers, monkeypatch: pytest.MonkeyPatch):
    client = app.recorder.committer.client
    real, calls = client.send, []

    def ack_lost_once(messages, timeout, done):
        def answered(last, error):  # the batch really landed
            calls.append(len(messages))
            done(*((None, TimeoutError()) if len(calls) == 1 else (last, error)))

        real(messages, timeout, answered)

    monkeypatch.setattr(client, "send", ack_lost_once)
    ledgers = [ledger_with(2), ledger_with(1), ledger_with(4)]
    results = commit_together(app, *(stored(app, ledger) for ledger in ledgers))
    assert calls[0] == 3 + 2 + 5
    for ledger, seqs in zip(ledgers, results, strict=True):
        assert at(app, seqs) == [(ledger.id, version) for version in range(1, ledger.version + 1)]
    notes = all_notifications(app)
    assert len(notes) == 10 and max(Counter((n.originator_id, n.originator_version) for n in notes).values()) == 1


class HeldBatches:
    """The client's `send`, with every atomic batch's answer held until `release` (its messages do land)."""

    def __init__(self, app: Ledgers, monkeypatch: pytest.MonkeyPatch) -> None:
        client = app.recorder.committer.client
        self.real, self.held = client.send, []
        monkeypatch.setattr(client, "send", self.send)

    def send(self, messages, timeout, done):
        if len(messages) == 1:
            self.real(messages, timeout, done)
            return
        self.real(messages, timeout, lambda last, error: self.held.append(lambda: done(last, error)))

    async def release(self) -> None:
        while not self.held:
            await asyncio.sleep(0.01)
        for answer in self.held:
            answer()


def test_a_single_goes_out_while_a_batch_is_in_flight_and_never_ahead_of_its_own_aggregate(
        app: Ledgers, monkeypatch: pytest.MonkeyPatch):
    batched, other = ledger_with(2), Ledger(owner="o")
    opened = stored(app, batched)
    batched.enter(9)
    held = HeldBatches(app, monkeypatch)
    committer = app.recorder.committer

    async def scene():
        batch = asyncio.ensure_future(committer.commit(opened, None))
        same = asyncio.ensure_future(committer.commit(stored(app, batched), None))
        alone = await asyncio.wait_for(committer.commit(stored(app, other), None), 5.0)  # the batch is unanswered
        assert not batch.done() and not same.done()  # the single of its aggregate waits for it
        await held.release()
        return await batch, await same, alone

    batch, same, alone = app.recorder.connection.loop.run(scene())
    assert alone[0] < batch[0] and same[0] > batch[-1] and at(app, batch + same) == [(batched.id, v) for v in (1, 2, 3, 4)]
    assert app.repository.get(batched.id).entries == [0, 1, 9] and at(app, alone) == [(other.id, 1)]


def test_singles_of_one_aggregate_land_in_the_order_they_were_committed(app: Ledgers):
    ledger = Ledger(owner="o")
    commits = [stored(app, ledger)]
    for amount in range(5):
        ledger.enter(amount)
        commits.append(stored(app, ledger))
    batches, _ = publishes(app)
    results = commit_together(app, *commits)
    assert publishes(app)[0] == batches  # no batch: six plain publishes, one after another
    assert at(app, [s for seqs in results for s in seqs]) == [(ledger.id, v) for v in range(1, 7)]
    assert app.repository.get(ledger.id).entries == [0, 1, 2, 3, 4]


def test_a_refused_single_fails_alone_and_the_batch_beside_it_lands(app: Ledgers):
    contested, mine = stale(app)  # one event: a single
    fresh = [ledger_with(2) for _ in range(2)]
    results = commit_together(app, stored(app, fresh[0]), stored(app, mine), stored(app, fresh[1]))
    assert isinstance(results[1], IntegrityError)
    assert [app.repository.get(f.id).entries for f in fresh] == [[0, 1]] * 2
    assert app.repository.get(contested).entries == [99]


def test_a_single_whose_ack_was_lost_is_found_landed_and_stored_once(app: Ledgers, monkeypatch: pytest.MonkeyPatch):
    client = app.recorder.committer.client
    real, lost = client.send, []

    def ack_lost_once(messages, timeout, done):
        def answered(last, error):  # the message really landed
            if not lost:
                lost.append(last)
                done(None, TimeoutError())
            else:
                done(last, error)

        real(messages, timeout, answered)

    monkeypatch.setattr(client, "send", ack_lost_once)
    ledger, before = Ledger(owner="o"), len(all_notifications(app))
    (seqs,) = commit_together(app, stored(app, ledger))
    assert seqs == lost  # the retry was answered as a duplicate of the first publish
    notes = all_notifications(app)
    assert len(notes) == before + 1 and at(app, seqs) == [(ledger.id, 1)]


def test_commits_handed_over_apart_are_published_together_and_each_lands_or_fails_alone(app: Ledgers):
    contested, mine = stale(app)  # a single the log refuses
    fresh = [Ledger(owner="o") for _ in range(3)]
    batches, commits = publishes(app)
    outcomes = app.recorder.insert_apart([stored(app, fresh[0]), stored(app, mine), *(stored(app, f) for f in fresh[1:])])
    assert publishes(app) == (batches, commits + 4)  # four plain publishes, no batch
    assert isinstance(outcomes[1], IntegrityError) and app.repository.get(contested).entries == [99]
    landed = [outcomes[0], *outcomes[2:]]
    assert [s[0] for s in landed] == sorted(s[0] for s in landed)  # in the order handed over
    assert [at(app, seqs) for seqs in landed] == [[(f.id, 1)] for f in fresh]


def test_a_unit_of_work_saves_aggregates_apart_and_keeps_those_that_landed(app: Ledgers):
    uow = UnitOfWork(env=app.test_env)
    try:
        contested, mine = stale(app)  # its save is refused: another writer came first
        fresh = [Ledger(owner="o") for _ in range(2)]
        with pytest.raises(WriteRace):
            uow.save_apart(fresh[0], mine, fresh[1])
        assert [uow.repository.get(f.id).owner for f in fresh] == ["o", "o"]
        assert app.repository.get(contested).entries == [99]
        assert uow.last_position == app.recorder.max_notification_id()  # the last that landed
    finally:
        uow.close()
