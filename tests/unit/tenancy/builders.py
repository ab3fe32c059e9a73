"""Ready-made tenants for the tenancy tests: one organization, its groups and users, at fixed times."""

from datetime import UTC, datetime, timedelta
from uuid import UUID

from domain.tenancy import Group, Organization, Role, User

T0 = datetime(2025, 3, 1, 9, 0, tzinfo=UTC)
ACME, GLOBEX = UUID(int=1), UUID(int=2)
ALICE, BOB, CAROL, DAVE = UUID(int=11), UUID(int=12), UUID(int=13), UUID(int=14)
TRAINING, INFERENCE = UUID(int=21), UUID(int=22)
HASH = "scrypt$1024$8$1$c2FsdHNhbHQ$aGFzaGhhc2hoYXNoaGFzaA"


def at(minutes: float) -> datetime:
    return T0 + timedelta(minutes=minutes)


def organization(owners: tuple[UUID, ...] = (ALICE,)) -> Organization:
    return Organization.create(ACME, "Acme", list(owners), by="root", at=T0)


def group(members: dict[UUID, Role] | None = None) -> Group:
    training = Group.create(TRAINING, ACME, "training", [ALICE], by="alice", at=T0)
    for user_id, role in (members or {}).items():
        training.add_member(user_id, role, by="alice", at=T0)
    return training


def user(username: str = "bob", role: Role = Role.USER, user_id: UUID = BOB) -> User:
    return User.register(user_id, ACME, username, f"{username}@acme.example", HASH, role, by="root", at=T0)
