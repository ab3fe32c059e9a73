"""Secrets: scoped, sealed values (the `SecretShelf` aggregate), the rules a secret obeys, the `Cipher` port,
and the `secret://` references a Fuzzfile's env entries make to them."""

from domain.secrets.index import INDEX_ID, SecretIndex
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
from domain.secrets.shelf import Entry, SecretShelf, entry_id, shelf_id

__all__ = ["INDEX_ID", "MAX_VALUE_BYTES", "Cipher", "CipherError", "Entry", "Reference", "Scope", "Sealed", "SecretError",
           "SecretIndex", "SecretShelf", "Use", "check_name", "check_scope", "check_value", "entry_id", "is_reference",
           "parse_reference", "referenced", "shelf_id", "uses"]
