"""The data directory (every tenant's audit rows, archived events, keys) is closed to other local users."""

from __future__ import annotations

from pathlib import Path

from api.composition.stack import close_data_dir


def test_a_new_data_directory_is_made_for_its_owner_only(tmp_path: Path):
    data = tmp_path / "deep" / "data"
    close_data_dir(data)
    assert data.stat().st_mode & 0o777 == 0o700


def test_an_open_data_directory_left_by_an_older_version_is_closed_at_start(tmp_path: Path):
    data = tmp_path / "data"
    data.mkdir(mode=0o755)
    data.chmod(0o755)
    (data / "audit.duckdb").write_bytes(b"rows")
    close_data_dir(data)
    assert data.stat().st_mode & 0o777 == 0o700
