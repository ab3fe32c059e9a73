"""Every Workflow event keeps the topic the log stores it under, however the aggregate's code is split."""

from eventsourcing.domain import CanMutateAggregate
from eventsourcing.utils import get_topic, resolve_topic

from domain.workflow import Workflow

# The events a log written before the split holds (domain/workflow.py, issue 29): each must still resolve here.
STORED = ["Submitted", "StageReadied", "ServiceScaled", "StageStarted", "TransferProgressed", "ImageProgressed",
          "StageRunning", "ServiceUnready", "ServiceReadyAgain", "StageFinished", "StageFailed", "StageRetried",
          "RetriesExhausted", "StagePreempted", "StageSkipped", "StepsSkipped", "Canceled", "VolumesBound",
          "StageNoted"]  # since the split: StageNoted (issue 46, what a node could not do as asked)


def test_each_stored_workflow_topic_resolves_to_the_event_class_that_applies_it():
    for name in STORED:
        topic = f"domain.workflow:Workflow.{name}"
        assert resolve_topic(topic) is getattr(Workflow, name), topic


def test_the_workflow_writes_no_event_under_a_topic_a_stored_log_does_not_know():
    inherited = ("Event", "Created")  # eventsourcing's base classes, redefined on every aggregate: never triggered
    events = [value for name, value in vars(Workflow).items()
              if isinstance(value, type) and issubclass(value, CanMutateAggregate) and name not in inherited]
    assert sorted(get_topic(e) for e in events) == sorted(f"domain.workflow:Workflow.{n}" for n in STORED)
