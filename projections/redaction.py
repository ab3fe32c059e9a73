"""What an audit row must not show: values under secret-looking names, `NAME=value` env entries with secret-looking
names, and `secret://` references, however deep in an event's state they sit.

Names are matched case-insensitively: a field whose name holds password, secret, token, credential or a key word
(api_key, private_key, ...) loses its value, as does an upper-case field (an env mapping) named as below; an env
entry loses its value when a part of its name (split on `_`)
is KEY, PWD, AUTH or PASS, or the name holds PASSWORD, SECRET, TOKEN or CREDENTIAL. The name stays, so a reader
still sees that a secret was set.
"""

from __future__ import annotations

import functools
import re
from typing import Any

REDACTED = "[redacted]"
FIELD_HINTS = ("password", "passwd", "secret", "token", "credential", "api_key", "apikey", "private_key",
               "access_key", "ssh_key", "signing_key")
ENV_HINTS = ("PASSWORD", "PASSWD", "SECRET", "TOKEN", "CREDENTIAL", "APIKEY", "PRIVATE")
ENV_PARTS = frozenset({"KEY", "PWD", "PASS", "AUTH", "PAT"})
ENV_ENTRY = re.compile(r"^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_.-]*)\s*=")
REFERENCE = "secret://"


@functools.lru_cache(maxsize=4096)  # field names are few; every row asks about each of them
def secret_field(name: str) -> bool:
    lowered = name.lower()
    return any(hint in lowered for hint in FIELD_HINTS) or (name.isupper() and secret_env_name(name))


@functools.lru_cache(maxsize=4096)
def secret_env_name(name: str) -> bool:
    upper = name.upper()
    return any(hint in upper for hint in ENV_HINTS) or not ENV_PARTS.isdisjoint(re.split(r"[_.-]", upper))


def redact(value: Any) -> Any:
    """`value` with every secret replaced; containers are copied, nothing is changed in place."""
    if isinstance(value, dict):
        return {k: (REDACTED if isinstance(k, str) and secret_field(k) and v not in (None, "") else redact(v))
                for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [redact(item) for item in value]
    if isinstance(value, str):
        return redact_text(value)
    return value


def redact_text(text: str) -> str:
    if REFERENCE in text:
        return REDACTED
    entry = ENV_ENTRY.match(text)
    if entry is not None and secret_env_name(entry.group(1)):
        return f"{entry.group(1)}={REDACTED}"
    return text
