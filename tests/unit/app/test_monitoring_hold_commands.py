"""A monitoring hold the ceiling refuses is answered as refused, never as placed."""

import pytest

from domain.app import Conflict
from domain.tenancy import Role, Source
from domain.tenancy.permissions import Principal
from tests.unit.app.builders import T0, app, later

MONITORING = Principal(user_id=None, username="alertmanager", role=Role.USER, organization_id=None,
                       source=Source.MONITORING)


def test_a_monitoring_hold_over_the_ceiling_is_refused_with_the_reason():
    roving = app()
    node, _ = roving.register_node("n1", 4, 2**30, {}, {}, "local", "127.0.0.1", None, T0)
    with pytest.raises(Conflict, match=r"hold refused: .*nodeHealth.maxMonitoringHeldPercent 20% of 1.*only at 100%"):
        roving.add_hold(node, "cordon", "ECC errors", MONITORING, later(1))
    assert roving.repository.get(node).holds == {}
