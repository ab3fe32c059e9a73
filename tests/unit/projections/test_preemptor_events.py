"""The preempting workflow's own events say what its placement preempted and why, not only where it went."""

from tests.unit.projections.builders import ONE_JOB, Feed, at, node, request, submit


def test_the_preemptors_placement_event_names_the_work_it_preempted_and_why():
    feed, n1 = Feed(), node("node-1")
    feed.save(n1)
    workflow = submit(ONE_JOB)
    allocation = request(workflow, "main")
    note = ("Preempted 1 lower-priority job on node-1: preemptible, with a priority below this one's 50 by more than "
            "the gap of 10")
    allocation.place([str(n1.id)], by="scheduler", at=at(1), note=note)
    feed.save(workflow, allocation)
    messages = [row.message for row in feed.views.workflows.events(workflow.id)]
    assert f"Placed on node-1. {note}" in messages


def test_an_ordinary_placement_still_reads_placed_on_its_nodes():
    feed, n1 = Feed(), node("node-1")
    feed.save(n1)
    workflow = submit(ONE_JOB)
    allocation = request(workflow, "main")
    allocation.place([str(n1.id)], by="scheduler", at=at(1))
    feed.save(workflow, allocation)
    assert "Placed on node-1" in [row.message for row in feed.views.workflows.events(workflow.id)]


def test_a_note_logged_naming_the_victims_is_shown_as_a_count_without_their_workflow():
    feed, n1 = Feed(), node("node-1")
    feed.save(n1)
    workflow = submit(ONE_JOB)
    allocation = request(workflow, "main")
    one = ("Preempted workflow 6f1c0d6e-0000-4000-8000-000000000001 job secret-stage on node-1: it is preemptible "
           "and its priority 5 is below this one's 50 by more than the gap of 10")
    allocation.place([str(n1.id)], by="scheduler", at=at(1), note=f"{one}; {one}")  # as older control planes wrote
    feed.save(workflow, allocation)
    [placed] = [m for m in (row.message for row in feed.views.workflows.events(workflow.id)) if "Placed" in m]
    assert placed == ("Placed on node-1. Preempted 2 lower-priority jobs on node-1: preemptible, with a priority "
                      "below this one's 50 by more than the gap of 10")


def test_a_placement_note_is_shown_bounded_whatever_its_length():
    feed, n1 = Feed(), node("node-1")
    feed.save(n1)
    workflow = submit(ONE_JOB)
    allocation = request(workflow, "main")
    allocation.place([str(n1.id)], by="scheduler", at=at(1), note="x" * 100_000)
    feed.save(workflow, allocation)
    [placed] = [m for m in (row.message for row in feed.views.workflows.events(workflow.id)) if "Placed" in m]
    assert len(placed) < 600
