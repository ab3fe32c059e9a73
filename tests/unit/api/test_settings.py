"""Settings come from ROVING_* variables, with the contract's defaults and one-line errors naming the variable."""

import pytest

from api.composition.settings import SettingsError, load_settings


def test_defaults_follow_the_contract():
    settings = load_settings({})
    assert str(settings.data_dir) == ".roving"
    assert settings.listen == "127.0.0.1:8080"
    assert (settings.local_nodes, settings.local_node_cpus) == (2, 4)
    assert settings.local_node_memory == 8 * 2**30
    assert settings.cluster == "local" and settings.log_format == "json"


def test_variables_override_the_defaults():
    settings = load_settings({"ROVING_DATA_DIR": "/tmp/r", "ROVING_LISTEN": "0.0.0.0:9000", "ROVING_LOCAL_NODES": "3",
                              "ROVING_LOCAL_NODE_MEMORY": "512MiB", "ROVING_TOKEN_TTL": "30m",
                              "ROVING_VIEW_SNAPSHOT_EVERY": "0"})
    assert (str(settings.data_dir), settings.host, settings.port) == ("/tmp/r", "0.0.0.0", 9000)
    assert settings.local_nodes == 3 and settings.local_node_memory == 512 * 2**20
    assert settings.token_ttl_seconds == 1800
    assert settings.view_snapshot_every == 0 and load_settings({}).view_snapshot_every == 50_000


def test_people_get_15_minute_access_tokens_14_day_refresh_tokens_and_12_hour_ui_sessions():
    found = load_settings({})
    assert (found.token_ttl_seconds, found.refresh_ttl_seconds, found.ui_session_ttl_seconds) == (900, 14 * 86400,
                                                                                                   12 * 3600)
    found = load_settings({"ROVING_REFRESH_TTL": "1d", "ROVING_UI_SESSION_TTL": "30m"})
    assert (found.refresh_ttl_seconds, found.ui_session_ttl_seconds) == (86400, 1800)


def test_monitoring_paces_at_15s_and_scrapes_node_exporters_on_9100_unless_told_otherwise():
    assert (load_settings({}).monitoring_interval, load_settings({}).node_exporter_port) == (15.0, 9100)
    settings = load_settings({"ROVING_MONITORING_INTERVAL": "500ms", "ROVING_NODE_EXPORTER_PORT": "0"})
    assert (settings.monitoring_interval, settings.node_exporter_port) == (0.5, 0)


@pytest.mark.parametrize("name, value", [
    ("ROVING_LOCAL_NODES", "two"), ("ROVING_LOCAL_NODE_CPUS", "0"), ("ROVING_LOCAL_NODE_MEMORY", "lots"),
    ("ROVING_LISTEN", "localhost"), ("ROVING_LOG_FORMAT", "xml"), ("ROVING_TOKEN_TTL", "soon"),
    ("ROVING_CLUSTER", "a b"), ("ROVING_VIEW_SNAPSHOT_EVERY", "-1"), ("ROVING_MONITORING_INTERVAL", "0s"),
    ("ROVING_NODE_EXPORTER_PORT", "ninety"), ("ROVING_REFRESH_TTL", "forever"), ("ROVING_UI_SESSION_TTL", "0s"),
])
def test_an_invalid_value_gives_one_line_naming_the_variable(name, value):
    with pytest.raises(SettingsError) as error:
        load_settings({name: value})
    assert str(error.value).startswith(name) and "\n" not in str(error.value)


def test_a_cluster_name_the_log_cannot_use_is_refused_at_start_naming_the_variable():
    with pytest.raises(SettingsError, match="ROVING_CLUSTER='Prod'.*lowercase"):
        load_settings({"ROVING_CLUSTER": "Prod"})


def test_the_job_log_streams_limits_and_the_retention_interval_are_settable_and_a_bad_value_is_named():
    defaults = load_settings({})
    assert (defaults.job_log_max_age, defaults.job_log_max_bytes, defaults.retention_interval) == (7 * 86400, 0, 3600)
    chosen = load_settings({"ROVING_JOB_LOG_MAX_AGE": "30d", "ROVING_JOB_LOG_MAX_BYTES": "200GiB",
                            "ROVING_RETENTION_INTERVAL": "5m"})
    assert (chosen.job_log_max_age, chosen.job_log_max_bytes, chosen.retention_interval) == (30 * 86400, 200 * 2**30, 300)
    for name in ("ROVING_JOB_LOG_MAX_AGE", "ROVING_JOB_LOG_MAX_BYTES", "ROVING_RETENTION_INTERVAL"):
        with pytest.raises(SettingsError, match=name):
            load_settings({name: "lots"})
