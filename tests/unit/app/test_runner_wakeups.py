"""What wakes the scheduler: a batch that arrives while the runner is being made, and a project's change."""

from __future__ import annotations

from api.scheduler.runner import SchedulerRunner
from projections.views import Views
from tests.unit.app.builders import app


class Eager:
    """Log signals whose listener is called at once with a batch already waiting (the tailer runs on its own thread:
    a batch can be delivered while the runner's constructor is still running)."""

    def __init__(self, kinds: list[str]) -> None:
        self.batch = [(n, self.event(kind)) for n, kind in enumerate(kinds, 1)]

    @staticmethod
    def event(kind: str):
        aggregate, name = kind.split(".")
        return type(aggregate, (), {"__qualname__": kind})()

    def listen(self, listener) -> None:
        listener(self.batch)


def test_a_batch_delivered_while_the_runner_is_made_wakes_it_instead_of_failing():
    runner = SchedulerRunner(app(), Views(), None, None, signals=Eager(["ClusterConfig.Changed", "Allocation.Readied"]))
    assert runner.wake.is_set() and runner._config_generation == 1


def test_a_project_change_wakes_the_scheduler_and_a_ledger_charge_does_not():
    runner = SchedulerRunner(app(), Views(), None, None)
    runner.observe([(1, Eager.event("Ledger.Charged"))])
    assert not runner.wake.is_set()
    runner.observe([(2, Eager.event("Project.QuotaSet"))])
    assert runner.wake.is_set()


def test_a_submission_wakes_the_scheduler_by_its_allocations_not_by_its_workflow():
    runner = SchedulerRunner(app(), Views(), None, None)
    runner.observe([(1, Eager.event("Workflow.Submitted")), (2, Eager.event("Workflow.StageNoted"))])
    assert not runner.wake.is_set()  # a plain submission's workflow lands before its allocations: nothing to place yet
    runner.observe([(3, Eager.event("Allocation.Readied"))])
    assert runner.wake.is_set()
