"""The application layer: commands that load aggregates, let them decide and save atomically."""

from domain.app.errors import Conflict, Forbidden, Invalid, LoginRefused, NotFound, StaleEpoch
from domain.app.roving import Roving

__all__ = ["Conflict", "Forbidden", "Invalid", "LoginRefused", "NotFound", "Roving", "StaleEpoch"]
