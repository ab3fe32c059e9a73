"""A storage provisioner's definition: the admin's program that makes volumes of one storage class, the root every
directory it answers must lie under, and how long it may run; checked field by field as the API takes it."""

from __future__ import annotations

import posixpath
import re

import msgspec

from domain.fuzzfile.schema import Problem
from domain.fuzzfile.volume_refs import EPHEMERAL_CLASS
from domain.fuzzfile.volume_refs import NAME as CLASS_NAME

NAME = re.compile(r"^[a-z0-9]([a-z0-9-]{0,38}[a-z0-9])?$")
LOCAL_CLASS = "persistent"  # the local provisioner's (domain.volumes.DEFAULT_CLASS), never a program's
TIMEOUT_DEFAULT, TIMEOUT_MOST = 300.0, 3600.0


class StorageBody(msgspec.Struct, frozen=True, kw_only=True, rename={"storage_class": "class",
                                                                     "timeout_seconds": "timeoutSeconds"}):
    """What `PUT /v4/volume-provisioners/{name}` takes."""

    storage_class: str
    program: str
    root: str
    timeout_seconds: float = TIMEOUT_DEFAULT


class StorageSpec(msgspec.Struct, frozen=True, kw_only=True):
    storage_class: str
    program: str
    root: str
    timeout_seconds: float = TIMEOUT_DEFAULT


def name_problem(name: str) -> str | None:
    if not NAME.match(name):
        return (f"{name!r} is not a volume provisioner name: 1 to 40 lower-case letters, digits and dashes, starting "
                "and ending with a letter or digit")
    return None


def to_spec(body: StorageBody) -> tuple[StorageSpec | None, list[Problem]]:
    """The checked definition, or every problem with the field it is in."""
    problems = []
    if not CLASS_NAME.match(body.storage_class) or body.storage_class in (EPHEMERAL_CLASS, LOCAL_CLASS):
        problems.append(Problem("class", f"{body.storage_class!r} is not a storage class a program may make: letters, "
                                         f"digits, `_`, `.`, `-`, and not {EPHEMERAL_CLASS} or {LOCAL_CLASS}"))
    if not posixpath.isabs(body.program):
        problems.append(Problem("program", f"{body.program!r} must be an absolute path on the control plane's host"))
    if not posixpath.isabs(body.root) or posixpath.normpath(body.root) in ("/", "//") \
            or posixpath.normpath(body.root) != body.root.rstrip("/"):
        problems.append(Problem("root", f"{body.root!r} must be an absolute, normalized directory other than /: every "
                                        "volume the program answers must lie under it"))
    if not 0 < body.timeout_seconds <= TIMEOUT_MOST:
        problems.append(Problem("timeoutSeconds", f"{body.timeout_seconds:g} must be more than 0 and at most "
                                                  f"{TIMEOUT_MOST:g}"))
    if problems:
        return None, problems
    return StorageSpec(storage_class=body.storage_class, program=body.program, root=body.root.rstrip("/"),
                       timeout_seconds=body.timeout_seconds), []


def path_problem(path: object, root: str) -> str | None:
    """Why a program's answer is not a volume directory this provisioner may give (None: it is)."""
    if not isinstance(path, str) or not path:
        return 'it must print {"path": "<the volume\'s directory>"}'
    if not posixpath.isabs(path) or posixpath.normpath(path) != path.rstrip("/"):
        return f"path {path[:200]!r} is not an absolute, normalized path"
    if not path.startswith(root.rstrip("/") + "/"):
        return f"path {path[:200]!r} is not under the provisioner's root {root}"
    return None
