"""The PosixIds aggregate: which uid (or gid) belongs to which user (or group), one aggregate per kind.

Every new user and group takes the next free id of the configured range from here, and every id an admin sets
is checked here: two commands that decide from the same version of this aggregate cannot both land (the log
refuses the second writer, which reloads and decides again), so no id is ever handed out twice.
"""

from __future__ import annotations

from datetime import datetime
from itertools import chain
from uuid import NAMESPACE_URL, UUID, uuid5

from eventsourcing.domain import event

from domain.ids import MAX_POSIX_ID
from domain.tenancy.common import TenancyError, TenantAggregate, require_aware

KINDS = ("uid", "gid")


def posix_ids_id(kind: str) -> UUID:
    return uuid5(NAMESPACE_URL, f"roving:posix-ids:{kind}")


class PosixIds(TenantAggregate):
    @event("Created")
    def __init__(self, id: UUID, kind: str, by: str, at: datetime) -> None:
        self.kind = kind
        self.owners: dict[int, UUID] = {}  # id -> user or group
        self.held: dict[UUID, int] = {}  # user or group -> id
        self.last = 0  # the id most recently allocated: the next search starts after it

    @classmethod
    def create(cls, kind: str, *, by: str, at: datetime) -> PosixIds:
        if kind not in KINDS:
            raise TenancyError("kind", f"must be uid or gid, got {kind!r}")
        return cls(id=posix_ids_id(kind), kind=kind, by=by, at=require_aware(at))

    def of(self, owner: UUID) -> int | None:
        return self.held.get(owner)

    def allocate(self, owner: UUID, first: int, last: int, *, by: str, at: datetime) -> int:
        """The next free id of [first, last] for `owner` (its own id when it already has one)."""
        if (held := self.of(owner)) is not None:
            return held
        start = self.last + 1 if first <= self.last < last else first
        for number in chain(range(start, last + 1), range(first, start)):  # lazily: a range may be billions long
            if number not in self.owners:
                self._claimed(number=number, owner=owner, released=None, allocated=True, by=by, at=require_aware(at))
                return number
        raise TenancyError(self.kind, f"every {self.kind} of the range {first}-{last} is taken; widen "
                                      f"posix.{self.kind}Range in the cluster config")

    def claim(self, owner: UUID, number: int, allow_root: bool, *, by: str, at: datetime) -> bool:
        """An admin gives `owner` this id (its old one is freed); False when it already had it."""
        _require_id(self.kind, number, allow_root)
        taken = self.owners.get(number)
        if taken == owner:
            return False
        if taken is not None:
            raise TenancyError(self.kind, f"{self.kind} {number} already belongs to another "
                                          f"{'user' if self.kind == 'uid' else 'group'}")
        self._claimed(number=number, owner=owner, released=self.of(owner), allocated=False, by=by, at=require_aware(at))
        return True

    @event("Claimed")
    def _claimed(self, number: int, owner: UUID, released: int | None, allocated: bool, by: str,
                 at: datetime) -> None:
        if allocated:
            self.last = number
        if released is not None:
            self.owners.pop(released, None)
        self.owners[number], self.held[owner] = owner, number


def _require_id(kind: str, number: int, allow_root: bool) -> None:
    if isinstance(number, bool) or not isinstance(number, int) or not 0 <= number <= MAX_POSIX_ID:
        raise TenancyError(kind, f"must be a whole number from 0 to {MAX_POSIX_ID}, got {number!r}")
    if number == 0 and not allow_root:
        raise TenancyError(kind, f"{kind} 0 is root: jobs would run as root; the cluster config must set "
                                 "posix.allowRootJobs first")
