"""A view row and the answer built from it keep one field list: a field added to the row is answered, or named here
as one the API leaves out, so it cannot go missing from the answer unnoticed."""

from api.http.answers import Group, Node, Organization, User, WorkflowSummary
from projections.nodes import NodeRow
from projections.tenancy import GroupRow, OrganizationRow, UserRow
from projections.workflows import WorkflowRow

OWNER_NAMES = ("user", "group", "organization")  # added by the route from the tenancy view
NODE_ROW_ONLY = {"address", "port", "joined_at"}  # where its agent listens and since when: for the API's own use
NODE_USAGE = {"allocated_cpu": "allocated", "allocated_memory": "allocated", "allocated_devices": "allocated"}


def test_a_listed_workflow_answers_every_field_of_its_row_in_the_row_s_order_then_its_owner_s_names():
    assert WorkflowSummary.__struct_fields__ == WorkflowRow.__struct_fields__ + OWNER_NAMES


def test_a_node_answers_every_field_of_its_row_but_where_its_agent_listens():
    answered = {NODE_USAGE.get(name, name) for name in NodeRow.__struct_fields__} - NODE_ROW_ONLY
    assert answered | {"free"} == set(Node.__struct_fields__)


def test_organizations_users_and_groups_answer_their_rows_fields_in_order_then_the_names_beside_the_ids():
    assert Organization.__struct_fields__ == OrganizationRow.__struct_fields__ + ("owner_names",)
    assert User.__struct_fields__ == UserRow.__struct_fields__ + ("group_names",)
    assert Group.__struct_fields__ == GroupRow.__struct_fields__ + ("preempt_names", "member_names")


def test_a_federated_answer_carries_its_cluster_s_label_after_its_own_fields_and_a_single_cluster_s_none():
    from api.http.answers import WorkflowEvents
    from api.http.routes.common import labelled

    events = WorkflowEvents(events=[], next=None)
    assert labelled(events, {"cluster": "c2", "local": False}).body == (
        b'{"events":[],"next":null,"cluster":"c2","local":false}')
    assert labelled(events, {}).body == b'{"events":[],"next":null}'


def test_a_queue_entry_is_its_row_then_its_owner_s_names_and_a_page_for_no_owner_says_only_that_it_is_empty():
    import msgspec

    from api.http.answers import QueuePage
    from api.http.answers.work import QueueEntry
    from projections.queue_rows import QueueRow

    assert QueueEntry.__struct_fields__ == ("cluster",) + QueueRow.__struct_fields__ + ("user", "group")
    assert msgspec.json.encode(QueuePage(queue=[], mine=True)) == b'{"queue":[],"mine":true}'


def test_a_queue_entry_names_its_cluster_first_on_a_federated_page_only():
    from datetime import UTC, datetime
    from uuid import UUID

    import msgspec

    from api.http.answers.work import queue_entry
    from projections.queue_rows import QueueRow

    row = QueueRow(id=UUID(int=1), workflow_id=UUID(int=2), stage="s", attempt=1, state="READY", priority=0.0,
                   priority_inputs={}, node=None, nodes=[], node_ids=[], epoch=0, preemptible=False, resources={},
                   execute_timeout_seconds=None, queued_at=datetime(2025, 1, 1, tzinfo=UTC), started_at=None,
                   ended_at=None, organization_id="o", group_id="g", user_id="u", exit_code=None, reason="")
    here = msgspec.json.decode(msgspec.json.encode(queue_entry(row, "ann", None)))
    there = msgspec.json.decode(msgspec.json.encode(queue_entry(row, "ann", None, cluster="c2")))
    assert list(here) == list(QueueRow.__struct_fields__) + ["user", "group"]
    assert list(there) == ["cluster", *here] and there["cluster"] == "c2"


def test_a_preset_answers_its_document_then_its_name_and_digest_and_a_description_only_when_it_has_one():
    import msgspec

    from api.http.routes.projects import preset_of
    from domain.presets import Preset

    plain = msgspec.json.decode(msgspec.json.encode(preset_of(Preset(name="p", options={"gpus": 1}))))
    told = preset_of(Preset(name="p", description="one gpu", options={"gpus": 1}))
    assert list(plain) == ["options", "name", "digest"]
    assert list(msgspec.json.decode(msgspec.json.encode(told))) == ["description", "options", "name", "digest"]
