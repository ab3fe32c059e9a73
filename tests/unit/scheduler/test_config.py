import pytest
from eventsourcing.application import Application

from domain.cluster_config import ClusterConfig, ConfigRejected
from domain.scheduler import SchedulerConfig, validate_config
from tests.unit.scheduler.builders import T0


def test_an_empty_configuration_yields_the_documented_defaults():
    config, warnings, errors = validate_config({})
    assert (warnings, errors) == ([], [])
    assert config.backfill_enabled and not config.preemption_enabled
    assert config.interval_seconds == 30 and config.min_preemption_runtime_seconds == 60
    assert (config.preemption_gap, config.preemption_threshold, config.max_evictions_per_tick) == (10, 75, 8)
    assert config.ignored_annotations == () and config.max_preemptions_per_window == 3
    assert (config.max_monitoring_held_percent, config.max_eviction_restarts) == (20, 3)


def test_every_problem_is_listed_at_once_with_key_position_and_reason():
    _, _, errors = validate_config({
        "scheduler.priority": "organization +\n  bogus",
        "scheduler.preemptionThreshold": 140,
        "scheduler.backfillEnabled": "yes",
    })
    by_key = {e.key: e for e in errors}
    assert set(by_key) == {"scheduler.priority", "scheduler.preemptionThreshold", "scheduler.backfillEnabled"}
    assert (by_key["scheduler.priority"].line, by_key["scheduler.priority"].column) == (2, 3)
    assert "bogus" in by_key["scheduler.priority"].reason
    assert "between 0 and 100" in by_key["scheduler.preemptionThreshold"].reason


def test_a_cel_syntax_error_names_its_line_and_column():
    _, _, [error] = validate_config({"scheduler.priority": "user + "})
    assert (error.line, error.column) == (1, 8)
    assert "Syntax error" in error.reason


def test_a_priority_mixing_int_and_double_is_rejected_before_it_reaches_the_scheduler():
    _, _, [error] = validate_config({"scheduler.priority": "workflow + 0.5"})
    assert "No such overload" in error.reason


def test_a_retired_key_is_accepted_with_a_warning():
    config, [warning], errors = validate_config({"scheduler.recognizedAnnotations": ["gpu"]})
    assert errors == [] and config == SchedulerConfig()
    assert warning.key == "scheduler.recognizedAnnotations" and "ignoredAnnotations" in warning.message


def test_an_unknown_key_names_the_nearest_valid_key():
    _, _, [error] = validate_config({"scheduler.backfillEnable": True})
    assert error.reason == "unknown key; did you mean scheduler.backfillEnabled?"


def test_nested_settings_and_durations_with_units_are_understood():
    config, _, errors = validate_config({"scheduler": {"interval": "2m", "minPreemptionRuntime": "1h"}})
    assert errors == [] and (config.interval_seconds, config.min_preemption_runtime_seconds) == (120, 3600)


def test_a_change_is_a_new_revision_recording_who_made_it():
    config = ClusterConfig(cluster="prod", by="root", at=T0)
    config.change({"scheduler.preemptionEnabled": True}, by="alice", at=T0)
    assert config.revision == 1 and config.scheduler().preemption_enabled
    assert config.history[-1]["by"] == "alice"


def test_a_rejected_change_applies_nothing_and_lists_every_problem():
    config = ClusterConfig(cluster="prod", by="root", at=T0)
    with pytest.raises(ConfigRejected) as rejected:
        config.change({"scheduler.interval": "soon", "scheduler.maxEvictionsPerTick": 0}, by="bob", at=T0)
    assert {p.key for p in rejected.value.problems} == {"scheduler.interval", "scheduler.maxEvictionsPerTick"}
    assert config.revision == 0 and config.scheduler() == SchedulerConfig()


def test_reset_returns_a_key_to_its_default_and_history_keeps_the_old_value():
    config = ClusterConfig(cluster="prod", by="root", at=T0)
    config.change({"scheduler.preemptionGap": 25}, by="alice", at=T0)
    config.reset(["scheduler.preemptionGap"], by="alice", at=T0)
    assert config.scheduler().preemption_gap == 10
    assert config.settings_at(1) == {"scheduler.preemptionGap": 25}


def test_the_configuration_survives_being_stored_and_reloaded():
    app = Application()
    config = ClusterConfig(cluster="prod", by="root", at=T0)
    config.change({"scheduler.ignoredAnnotations": ["team"], "scheduler.interval": 45}, by="alice", at=T0)
    app.save(config)
    again = app.repository.get(ClusterConfig.create_id("prod"))
    assert again.scheduler().ignored_annotations == ("team",)
    assert again.revision == 1 and again.id == config.id


def test_the_event_streams_retention_is_off_by_default_and_takes_an_age_and_a_size():
    config, _, errors = validate_config({})
    assert errors == [] and (config.retention_finished_after_seconds, config.retention_max_bytes) == (0, 0)
    config, _, errors = validate_config({"retention": {"finishedAfter": "90d", "maxBytes": "50GiB"}})
    assert errors == [] and (config.retention_finished_after_seconds, config.retention_max_bytes) == (90 * 86400, 50 * 2**30)


def test_a_bad_retention_names_the_key_and_what_it_expects():
    _, _, errors = validate_config({"retention.finishedAfter": "soon", "retention.maxBytes": "lots"})
    reasons = {e.key: e.reason for e in errors}
    assert "expected a duration" in reasons["retention.finishedAfter"]
    assert "not a memory size" in reasons["retention.maxBytes"]
