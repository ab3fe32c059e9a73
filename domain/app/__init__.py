"""The application layer: handlers that load aggregates, let them decide and save each command atomically.

`Roving` is its face; `ReadModels` what it asks the views at decision time; `access` who may do what.
"""

from domain.app.errors import Conflict, Forbidden, Invalid, LoginRefused, NotFound, StaleEpoch
from domain.app.read_models import NoReadModels, ReadModelFunctions, ReadModels
from domain.app.roving import Roving

__all__ = ["Conflict", "Forbidden", "Invalid", "LoginRefused", "NoReadModels", "NotFound", "ReadModelFunctions",
           "ReadModels", "Roving", "StaleEpoch"]
