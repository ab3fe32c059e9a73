"""Application errors the API turns into 4xx answers: each says what the caller did wrong."""

from __future__ import annotations

from domain.fuzzfile import Problem


class AppError(Exception):
    """Base of the errors a user can act on."""


class NotFound(AppError):
    def __init__(self, what: str) -> None:
        super().__init__(f"{what} not found")


class Invalid(AppError):
    def __init__(self, problems: list[Problem]) -> None:
        super().__init__("; ".join(f"{p.path}: {p.message}" for p in problems))
        self.problems = problems


class Conflict(AppError):
    """A real conflict of intent (e.g. stopping a workflow that already ended): 409, the message says which."""


class WriteRace(Conflict):
    """A commit refused because another writer changed one of its aggregates first: the command decides again."""


class Busy(AppError):
    """A command that kept losing write races within its bounded retries: 503, try again shortly."""


class Forbidden(AppError):
    pass


class StaleEpoch(AppError):
    """A report or heartbeat from a placement the control plane has moved past (fenced): 409 `stale_epoch`."""


class LoginRefused(AppError):
    pass


def invalid(path: str, message: str) -> Invalid:
    return Invalid([Problem(path=path, message=message)])
