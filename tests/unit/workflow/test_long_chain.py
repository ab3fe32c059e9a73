"""A 3,000-job chain runs hop by hop, and when its first job fails the whole cascade of cancels is one event that
fits one commit (one event per canceled stage was 2,999 messages, past the 1,000 one atomic batch holds)."""

from test_workflow_golden import mapper
from workflow_builders import at, fuzzfile, step, submit

from adapters.jetstream.client import MAX_BATCH

LENGTH = 3000


def chain() -> str:
    return fuzzfile([step("j0"), *(step(f"j{i}", f"j{i - 1}") for i in range(1, LENGTH))])


def test_a_failure_at_the_head_of_a_long_chain_cancels_the_rest_in_one_event_that_fits_a_commit():
    workflow = submit(chain())
    assert [r.stage.name for r in workflow.ready_stages()] == ["j0"]
    workflow.collect_events()
    workflow.stage_started("j0", 1, "n1", at(1))
    workflow.stage_exited("j0", 1, 1, at(2))
    events = workflow.collect_events()
    assert len(events) < MAX_BATCH and [type(e).__name__ for e in events][-1] == "StepsSkipped"
    assert len(mapper().to_stored_event(events[-1]).state) < 900 * 1024  # under JetStream's 1 MiB message
    assert workflow.status == "FAILED"
    last = workflow.stage(f"j{LENGTH - 1}").reason
    assert last == f"Canceled: j{LENGTH - 2} was canceled; a canceled dependency never satisfies FINISHED"
    assert sum(v.status.value == "CANCELED" for v in workflow.stage_views()) == LENGTH - 1


def test_a_long_chain_starts_one_stage_per_hop():
    workflow = submit(chain())
    for i in range(5):
        workflow.stage_started(f"j{i}", 1, "n1", at(i))
        workflow.stage_exited(f"j{i}", 1, 0, at(i))
        assert [r.stage.name for r in workflow.newly_ready()] == [f"j{i + 1}"]
        workflow.collect_events()
