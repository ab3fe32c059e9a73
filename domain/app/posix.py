"""POSIX ids of users and groups: allocated from the configured range at creation, or set by a cluster admin.

The id lives on the user (or group) and in the PosixIds aggregate of its kind; both are saved in the command's one
commit, so a concurrent creation that took the same id first makes this command lose its write race, reload and
take the next one.
"""

from __future__ import annotations

from datetime import datetime
from types import TracebackType

from domain.app.errors import Invalid
from domain.app.unit_of_work import UnitOfWork
from domain.fuzzfile import Problem
from domain.scheduler.config import SchedulerConfig
from domain.tenancy import Group, TenancyError, User
from domain.tenancy.posix_ids import PosixIds, posix_ids_id


def registry(uow: UnitOfWork, kind: str, by: str, at: datetime) -> PosixIds:
    """The PosixIds aggregate of `kind` (uid or gid), created on first use."""
    found = posix_ids_id(kind)
    return uow.load(PosixIds, found, kind) if found in uow.repository else PosixIds.create(kind, by=by, at=at)


def allocate(uow: UnitOfWork, owner: User | Group, config: SchedulerConfig, by: str, at: datetime) -> PosixIds:
    """Give a new user its uid (a new group its gid) from the configured range; returns the registry to save."""
    kind, first_last = ("uid", config.uid_range) if isinstance(owner, User) else ("gid", config.gid_range)
    ids = registry(uow, kind, by, at)
    with posix_errors():
        number = ids.allocate(owner.id, *first_last, by=by, at=at)
        _record(owner, number, by, at)
    return ids


def assign(uow: UnitOfWork, owner: User | Group, number: int, config: SchedulerConfig, by: str,
           at: datetime) -> PosixIds:
    """A cluster admin's choice of id (unique, never 0 unless posix.allowRootJobs); returns the registry to save."""
    ids = registry(uow, "uid" if isinstance(owner, User) else "gid", by, at)
    with posix_errors():
        ids.claim(owner.id, number, config.allow_root_jobs, by=by, at=at)
        _record(owner, number, by, at)
    return ids


def _record(owner: User | Group, number: int, by: str, at: datetime) -> None:
    if isinstance(owner, User):
        owner.set_uid(number, by=by, at=at)
    else:
        owner.set_gid(number, by=by, at=at)


class posix_errors:
    """A refused id is a 400 naming uid or gid and why."""

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        if isinstance(error, TenancyError):
            raise Invalid([Problem(path=error.field, message=error.reason)]) from error
