"""The soak's quota and license invariant catches what it is there to catch, from the log alone."""

from ops.soak.eventlog import Event
from ops.soak.limits import check_limits
from ops.soak.tally import Tally

CPU = {"cpu_cores": 2, "memory_bytes": 0}


def event(seq, kind, aggregate, name, **state) -> Event:
    return Event(seq=seq, kind=kind, aggregate=aggregate, version=1, name=name, state=state)


def history(second_license: bool = True, second_ends_first: bool = False) -> list[Event]:
    events = [event(1, "project", "p1", "Created", path="lab"), event(2, "project", "p1", "QuotaSet", limits={"cpu": 3}),
              event(3, "clusterconfig", "c", "Changed", changes={"scheduler.sharedResources": {"lic": 1}}),
              event(4, "workflow", "w1", "Submitted", owner={"project": "lab"}),
              event(5, "allocation", "a1", "Requested", workflow_id="w1", resources={**CPU, "shared": {"lic": 1}}),
              event(6, "allocation", "a2", "Requested", workflow_id="w1",
                    resources={**CPU, "shared": {"lic": 1}} if second_license else CPU),
              event(7, "allocation", "a1", "Placed", nodes=["n1"])]
    if second_ends_first:
        events.append(event(8, "allocation", "a1", "Ended", state="FINISHED"))
    events.append(event(9, "allocation", "a2", "Placed", nodes=["n1"]))
    return events


def test_two_allocations_holding_one_license_and_more_than_the_quota_are_both_violations():
    tally = Tally(1)
    summary = check_limits(history(), tally)
    assert tally.violations == {"quota_exceeded": 1, "shared_exceeded": 1}
    assert summary["peak"]["lic"] == 2 and summary["peak"]["lab.cpu"] == 4


def test_work_placed_after_the_holder_ended_is_within_the_limits():
    tally = Tally(1)
    check_limits(history(second_ends_first=True), tally)
    assert tally.violations == {}


def test_a_ledger_still_holding_at_quiescence_is_a_violation():
    tally = Tally(1)
    check_limits([event(1, "ledger", "L", "Opened", name_="lic"),
                  event(2, "ledger", "L", "Charged", allocation_id="a1", amounts={"lic": 1})], tally)
    assert tally.violations == {"quota_not_freed": 1}
