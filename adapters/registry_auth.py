"""Registry credentials from a job's image secret: parsed from the secret's value, handed to skopeo in an auth file.

The value is `USER:PASSWORD`, JSON `{"username": ..., "password": ...}`, JSON `{"token": ...}` or a bare token (an
identity token, as `docker login` stores it). skopeo reads it from an auth file written 0600 in a private temporary
directory and removed after the call, never from its command line, where `ps` would show it to every user of the
node. Errors name the field (`image.secret`), never the value.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from adapters.runspec import SpecError
from domain.secrets.references import IMAGE_SECRET_VARIABLE


class CredentialError(SpecError):
    """An image secret whose value is no credential: says what shape was expected, never the value."""


@dataclass(frozen=True)
class Credential:
    username: str = ""
    password: str = field(default="", repr=False)
    token: str = field(default="", repr=False)

    def auth_entry(self) -> dict[str, str]:
        """The entry of containers-auth.json for one registry."""
        if self.token:
            return {"identitytoken": self.token}
        return {"auth": base64.b64encode(f"{self.username}:{self.password}".encode()).decode()}


def parse_credential(value: str) -> Credential:
    """A credential from an image secret's value (see the module's docstring for the shapes accepted)."""
    text = value.strip()
    if not text:
        raise CredentialError("image.secret: the secret is empty; expected USER:PASSWORD, JSON or a token")
    if text[0] in "{[":
        return _from_json(text)
    if ":" in text:
        username, _, password = text.partition(":")
        if not username or not password:
            raise CredentialError("image.secret: expected USER:PASSWORD with neither part empty")
        return Credential(username=username, password=password)
    if any(c.isspace() for c in text):
        raise CredentialError("image.secret: a token has no spaces; expected USER:PASSWORD, JSON or a token")
    return Credential(token=text)


def _from_json(text: str) -> Credential:
    try:
        found = json.loads(text)
    except ValueError:
        raise CredentialError("image.secret: the secret looks like JSON but is not valid JSON") from None
    if not isinstance(found, dict):
        raise CredentialError("image.secret: expected a JSON object with username and password, or token")
    username, password, token = (found.get(k) for k in ("username", "password", "token"))
    if isinstance(token, str) and token:
        return Credential(token=token)
    if isinstance(username, str) and isinstance(password, str) and username and password:
        return Credential(username=username, password=password)
    raise CredentialError("image.secret: expected a JSON object with username and password, or token")


def take_credential(env: dict[str, str] | None) -> tuple[dict[str, str] | None, str]:
    """(the job's env without the image secret, the secret's value): the job never sees its registry's password."""
    if not isinstance(env, dict) or IMAGE_SECRET_VARIABLE not in env:
        return env, ""  # no secret (or a shape build_spec will name)
    rest = dict(env)
    return rest, rest.pop(IMAGE_SECRET_VARIABLE)


@contextlib.contextmanager
def auth_file(credential: Credential | None, registry: str) -> Iterator[Path | None]:
    """A containers-auth.json holding `credential` for `registry`, readable by this process's user only, removed
    when the block ends (None without a credential)."""
    if credential is None:
        yield None
        return
    directory = Path(tempfile.mkdtemp(prefix="roving-auth-"))  # 0700
    try:
        path = directory / "auth.json"
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
        with os.fdopen(fd, "w") as out:
            json.dump({"auths": {registry: credential.auth_entry()}}, out)
        yield path
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def source_auth(path: Path | None, anonymous: bool = False) -> list[str]:
    """skopeo copy's options for the source's credentials; `anonymous` ignores the node's own auth files."""
    if path is not None:
        return [f"--src-authfile={path}"]
    return ["--src-no-creds"] if anonymous else []


def inspect_auth(path: Path | None, anonymous: bool = False) -> list[str]:
    """skopeo inspect's options for credentials, as `source_auth`."""
    if path is not None:
        return [f"--authfile={path}"]
    return ["--no-creds"] if anonymous else []
