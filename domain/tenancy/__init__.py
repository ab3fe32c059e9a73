"""Tenancy: organizations, groups and users with their priorities and roles, password policy and permissions."""

from domain.tenancy.common import NotPermitted, Role, Source, TenancyError
from domain.tenancy.group import Group
from domain.tenancy.organization import Organization
from domain.tenancy.passwords import WeakPassword, password_problems, require_strong
from domain.tenancy.permissions import (
    Action,
    Decision,
    Denied,
    Outcome,
    Principal,
    Resource,
    authorize,
    can,
    principal_for,
)
from domain.tenancy.user import LoginOutcome, User

__all__ = [
    "Action", "Decision", "Denied", "Group", "LoginOutcome", "NotPermitted", "Organization", "Outcome",
    "Principal", "Resource", "Role", "Source", "TenancyError", "User", "WeakPassword", "authorize", "can",
    "password_problems", "principal_for", "require_strong",
]
