"""Secrets: scoped, sealed values (the `SecretShelf` aggregate), the rules a secret obeys, the `Cipher` port,
and the `secret://` references a Fuzzfile's env entries make to them.

The aggregates (which need eventsourcing) load when first named, so the CLI's light install checks a secret's
name and value with the rules alone."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from domain.secrets.references import Reference, Use, is_reference, parse_reference, referenced, uses
from domain.secrets.rules import (
    MAX_VALUE_BYTES,
    Cipher,
    CipherError,
    Scope,
    Sealed,
    SecretError,
    check_name,
    check_scope,
    check_value,
)

if TYPE_CHECKING:
    from domain.secrets.index import INDEX_ID, SecretIndex
    from domain.secrets.shelf import Entry, SecretShelf, entry_id, shelf_id

AGGREGATES = {"INDEX_ID": "index", "SecretIndex": "index", "Entry": "shelf", "SecretShelf": "shelf",
              "entry_id": "shelf", "shelf_id": "shelf"}

__all__ = ["INDEX_ID", "MAX_VALUE_BYTES", "Cipher", "CipherError", "Entry", "Reference", "Scope", "Sealed", "SecretError",
           "SecretIndex", "SecretShelf", "Use", "check_name", "check_scope", "check_value", "entry_id", "is_reference",
           "parse_reference", "referenced", "shelf_id", "uses"]


def __getattr__(name: str) -> Any:
    module = AGGREGATES.get(name)
    if module is None:
        raise AttributeError(f"module 'domain.secrets' has no attribute {name!r}")
    return getattr(importlib.import_module(f"domain.secrets.{module}"), name)
