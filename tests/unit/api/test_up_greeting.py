"""What `roving up` prints: where the API and the web UI are, and how the admin signs in to each."""

from __future__ import annotations

from pathlib import Path

from api.up.main import greeting


def test_the_greeting_names_the_web_ui_and_where_the_admin_password_is(tmp_path: Path):
    (tmp_path / "admin.token").write_text("tok-123\n")
    (tmp_path / "admin.password").write_text("secret-pw\n")
    said = greeting("http://127.0.0.1:8080", tmp_path)
    assert "admin token: tok-123" in said
    assert f"Web UI: http://127.0.0.1:8080/ui/ (sign in as admin; the password is in {tmp_path / 'admin.password'})" in said
    assert "secret-pw" not in said


def test_the_greeting_says_when_the_admin_password_file_is_gone(tmp_path: Path):
    (tmp_path / "admin.token").write_text("tok-123\n")
    assert "which is gone now" in greeting("http://127.0.0.1:8080", tmp_path)
