"""The web UI under /ui/: server-rendered pages over the API's own handlers, a session cookie, CSRF-checked forms."""

from api.http.ui.routes import UiGate

__all__ = ["UiGate"]
