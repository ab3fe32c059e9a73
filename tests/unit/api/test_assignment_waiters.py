"""A held poll reads the answer the push publisher made for the same batch, and never one the views have moved past."""

from uuid import uuid4

from api.composition.wakeups import AssignmentWaiters
from domain.agent_protocol import Assignments, Stop


def test_a_poll_reads_the_answer_made_at_the_views_position_and_not_an_older_one():
    node, waiters = uuid4(), AssignmentWaiters(views=None)
    stop = Stop(allocation_id=str(uuid4()), epoch=1, workflow_id=str(uuid4()), stage="main", state="CANCELED",
                reason="canceled by alice")
    made = Assignments([], [stop], [], position=7)
    waiters.built(str(node), made)
    assert waiters.current(node, 7) is made
    assert waiters.current(node, 8) is None  # a later batch landed since: the answer is made again
    assert waiters.current(uuid4(), 7) is None
