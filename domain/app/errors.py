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
    pass


class Forbidden(AppError):
    pass


class StaleEpoch(AppError):
    pass


class LoginRefused(AppError):
    pass


def invalid(path: str, message: str) -> Invalid:
    return Invalid([Problem(path=path, message=message)])
