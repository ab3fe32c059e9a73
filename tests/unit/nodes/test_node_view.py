"""Given nodes mapped to the scheduler's NodeView, the scheduler places work only where a node takes it."""

from domain.holds import Effect, Source
from domain.node_admission import to_node_view
from domain.scheduler import SchedulerConfig, schedule
from domain.scheduler.snapshot import HoldEffect, HoldSource, NodeStatus, QueuedAllocation, Snapshot
from tests.unit.nodes.builders import T0, GiB, at, ready_node, registered_node


def placed(nodes) -> dict[str, tuple[str, ...]]:
    job = QueuedAllocation(id="a", workflow_id="wf", stage="train", cpu=2, memory=GiB, submitted_at=T0)
    decisions = schedule(Snapshot(queued=(job,), nodes=tuple(to_node_view(n) for n in nodes)), SchedulerConfig(), at(10))
    return {p.allocation_id: p.node_ids for p in decisions.placements}


def test_the_view_carries_capacity_status_and_holds():
    node = ready_node(devices={"nvidia.com/gpu": 4}, annotations={"rack": "r1"}, segment="s1")
    node.place_hold("h1", Effect.EVICT, Source.MONITORING, "XID 79", by="alertmanager", at=at(2), max_monitoring_percent=100)
    view = to_node_view(node)
    assert (view.id, view.name, view.definition_id, view.status) == (str(node.id), "n1", "gpu-pool", NodeStatus.READY)
    assert (view.cpu, view.devices, view.annotations, view.segment) == (8, {"nvidia.com/gpu": 4}, {"rack": "r1"}, "s1")
    [hold] = view.holds
    assert (hold.id, hold.effect, hold.source) == ("h1", HoldEffect.EVICT, HoldSource.MONITORING)
    assert (hold.reason, hold.by) == ("XID 79", "alertmanager")


def test_the_scheduler_skips_held_and_unready_nodes():
    held = ready_node(1)
    held.place_hold("h1", Effect.CORDON, Source.ADMIN, "bios update", by="alice", at=at(2))
    assert placed([held, registered_node(2), ready_node(3)]) == {"a": (str(ready_node(3).id),)}


def test_a_removed_node_is_offline_to_the_scheduler():
    node = ready_node()
    node.remove([], by="alice", at=at(2), force=True)
    assert to_node_view(node).status is NodeStatus.OFFLINE
    assert placed([node]) == {}
