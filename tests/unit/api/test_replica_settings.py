"""ROVING_NATS_REPLICAS: how many servers keep each stream; a count JetStream cannot keep is named at start."""

from __future__ import annotations

import pytest

from api.composition.settings import SettingsError, load_settings


def test_replicas_default_to_one_and_take_the_setting() -> None:
    assert load_settings({}).nats_replicas == 1
    assert load_settings({"ROVING_NATS_REPLICAS": "3"}).nats_replicas == 3


@pytest.mark.parametrize(("raw", "reason"), [("0", "at least 1"), ("6", "at most 5"), ("three", "whole number")])
def test_a_replica_count_jetstream_cannot_keep_is_refused_naming_the_variable(raw: str, reason: str) -> None:
    with pytest.raises(SettingsError, match=f"ROVING_NATS_REPLICAS.*{reason}"):
        load_settings({"ROVING_NATS_REPLICAS": raw})
