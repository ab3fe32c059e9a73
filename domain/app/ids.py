"""The deterministic ids, named where the application's modules import them; they live in domain.ids, which the
CLI imports without loading the application (and its server dependencies)."""

from domain.ids import ROOT, allocation_id, endpoint_id, group_id, hold_id, node_id, org_id, user_id

__all__ = ["ROOT", "allocation_id", "endpoint_id", "group_id", "hold_id", "node_id", "org_id", "user_id"]
