"""Where an object lives: `object://user/PATH` (the caller's own), `object://group/GROUP/PATH` (a group's), or a bare
PATH (the caller's own); a location ending in `/` is a folder, under which a put infers the object's name.

Pure and light (the CLI parses its arguments with it): no tenancy, no storage.
"""

from __future__ import annotations

import enum
import posixpath
import re

import msgspec

PREFIX = "object://"
MAX_NAME = 1024  # bytes of UTF-8: an object's name is a NATS subject token (base64) and a file name on `get`
GROUP_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$")  # as groups are named (domain.tenancy.group)
UNPRINTABLE = re.compile(r"[\x00-\x1f\x7f]")


class Scope(str, enum.Enum):
    USER = "user"
    GROUP = "group"


class ObjectNameError(ValueError):
    """A location that is not one; `reason` says why, for the field the caller names."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class Location(msgspec.Struct, frozen=True):
    """An object (or, with a name that is empty or ends in `/`, a folder of objects) in one scope."""

    scope: Scope
    name: str = ""
    group: str = ""  # the group's name, for Scope.GROUP

    @property
    def is_folder(self) -> bool:
        return self.name == "" or self.name.endswith("/")

    @property
    def uri(self) -> str:
        group = f"{self.group}/" if self.scope is Scope.GROUP else ""
        return f"{PREFIX}{self.scope.value}/{group}{self.name}"

    def inside(self, file_name: str) -> Location:
        """The object a put names: this one, or for a folder the file's own name in it."""
        if not self.is_folder:
            return self
        base = posixpath.basename(file_name.rstrip("/"))
        if base in ("", ".", ".."):
            raise ObjectNameError(f"{self.uri} is a folder and {file_name!r} has no file name to put in it; "
                                  "name the object in full")
        return msgspec.structs.replace(self, name=check_name(self.name + base, folder=False))


def parse_location(text: str) -> Location:
    """`object://user/PATH`, `object://group/GROUP/PATH` or a bare PATH (the caller's own); ObjectNameError if not."""
    if not text.startswith(PREFIX):
        if "://" in text:
            raise ObjectNameError(f"{text!r}: expected object://user/PATH, object://group/GROUP/PATH or a bare PATH")
        return Location(Scope.USER, check_name(text))
    scope, _, rest = text.removeprefix(PREFIX).partition("/")
    if scope == Scope.USER.value:
        return Location(Scope.USER, check_name(rest))
    if scope == Scope.GROUP.value:
        group, slash, name = rest.partition("/")
        if not GROUP_NAME.match(group) or not slash:
            raise ObjectNameError(f"{text!r}: expected object://group/GROUP/PATH, GROUP a group's name")
        return Location(Scope.GROUP, check_name(name), group)
    raise ObjectNameError(f"{text!r}: the scope is user or group (object://user/PATH, object://group/GROUP/PATH)")


def check_name(name: str, folder: bool = True) -> str:
    """A name of `/`-separated parts, none empty, `.` or `..`, with no `\\`; "" and a trailing `/` (a folder) only if
    `folder`."""
    folder = folder and (name == "" or name.endswith("/"))
    parts = (name.removesuffix("/") if folder else name).split("/") if name else []
    if not name and not folder:
        raise ObjectNameError("an object needs a name")
    if len(name.encode()) > MAX_NAME:
        raise ObjectNameError(f"an object's name is at most {MAX_NAME} bytes, this one is {len(name.encode())}")
    if UNPRINTABLE.search(name):
        raise ObjectNameError(f"{name!r}: control characters are not allowed in a name")
    if "\\" in name:  # a Windows path's separator: `a\..\b` would be `..` once a client on Windows saves it
        raise ObjectNameError(f"{name!r} has a `\\`; a name is parts separated by single `/`")
    for part in parts:
        if part in ("", ".", ".."):
            shown = "an empty part (`//` or a leading `/`)" if part == "" else f"a `{part}` part"
            raise ObjectNameError(f"{name!r} has {shown}; a name is parts separated by single `/`")
    return name
