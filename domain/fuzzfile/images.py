"""Image builds of a workflow (top-level `images:`): each is a stage `build:NAME` run before the jobs whose image
is `fuzzball://user/NAME`, and after the image it is built `from` when that is one of the workflow's own.

The build plan is what the node needs: the base image, the files (a `file://NAME` source already read from the
workflow's top-level `files`), the post script, scope and ttl, and `digest`, the sha256 of that plan in
canonical form. The node adds the base image's own digest to it to name the cached result, so an unchanged
definition on an unchanged base is served from the cache.
"""

from __future__ import annotations

import hashlib
import json
import re

import msgspec

from domain.durations import DurationError, parse_duration
from domain.fuzzfile.decode import join
from domain.fuzzfile.schema import ImageBuild, Problem, Workflow

BUILD = "build"
USER_PREFIX = "fuzzball://user/"
FROM_SCHEMES = ("docker://", USER_PREFIX)
SCOPES = ("user", "group")
IMAGE_NAME = re.compile(r"^[a-z0-9][a-z0-9._-]{0,62}$")
FILE = "file://"
RUNTIME_ANNOTATION = "roving.io/runtime"  # every agent says which runtime it has; builds need `oci`


class BuildPlan(msgspec.Struct, frozen=True, omit_defaults=True):
    """What a node does to build one image, and the digest naming that recipe."""

    name: str
    source: str  # docker://REF or fuzzball://user/NAME
    files: dict[str, str] = {}  # absolute path in the image -> content
    modes: dict[str, int] = {}  # path -> mode, where the definition gave one
    post: str = ""
    scope: str = "user"
    ttl_seconds: float | None = None
    network: bool = False
    digest: str = ""


def build_stage_name(image: str) -> str:
    return f"{BUILD}:{image}"


def referenced_image(uri: str | None) -> str | None:
    """`fuzzball://user/tools` -> `tools`; None for any other image reference."""
    if uri is None or not uri.startswith(USER_PREFIX):
        return None
    return uri.removeprefix(USER_PREFIX).split(":", 1)[0] or None


def own_image(workflow: Workflow, uri: str | None) -> str | None:
    """The name of the workflow's own image `uri` refers to, or None (a registry image, or one built before)."""
    name = referenced_image(uri)
    return name if name is not None and name in (workflow.images or {}) else None


def image_order(workflow: Workflow) -> list[str]:
    """The workflow's images with every image after the one it is built from (the images must be acyclic)."""
    images = workflow.images or {}
    order: list[str] = []

    def visit(name: str) -> None:
        if name in order:
            return
        base = own_image(workflow, images[name].base)
        if base is not None and base != name:
            visit(base)
        order.append(name)

    for name in images:
        visit(name)
    return order


def build_plan(workflow: Workflow, name: str) -> BuildPlan:
    image = (workflow.images or {})[name]
    files = {path: _content(workflow, f.content, f.source) for path, f in sorted((image.files or {}).items())}
    modes = {path: f.mode for path, f in sorted((image.files or {}).items()) if f.mode is not None}
    plan = BuildPlan(name=name, source=image.base, files=files, modes=modes, post=image.post or "",
                     scope=image.scope or "user", ttl_seconds=_ttl(image.ttl), network=bool(image.network))
    recipe = msgspec.to_builtins(msgspec.structs.replace(plan, name="", scope="", ttl_seconds=None))
    digest = hashlib.sha256(json.dumps(recipe, sort_keys=True, separators=(",", ":")).encode()).hexdigest()
    return msgspec.structs.replace(plan, digest=digest)


def _content(workflow: Workflow, content: str | None, source: str | None) -> str:
    if content is not None:
        return content
    return (workflow.files or {}).get((source or "").removeprefix(FILE), "")


def _ttl(ttl: str | int | float | None) -> float | None:
    return None if ttl is None else parse_duration(ttl)


def check_images(workflow: Workflow, steps: set[str]) -> list[Problem]:
    """Every problem of the `images:` section: names, bases, files, scope, ttl, a name clash with a step, and
    cycles of images built from each other (named)."""
    problems: list[Problem] = []
    for name, image in (workflow.images or {}).items():
        path = join("images", name)
        if not IMAGE_NAME.match(name):
            problems.append(Problem(path, "an image name is lower-case letters, digits, `.`, `_` and `-` "
                                          "(at most 63), starting with a letter or digit"))
        if build_stage_name(name) in steps:
            problems.append(Problem(path, f"`{build_stage_name(name)}` is the name of this image's build stage; "
                                          "rename the job or service that uses it"))
        problems += _check_one(workflow, image, path)
    return problems or _cycles(workflow)


def _check_one(workflow: Workflow, image: ImageBuild, path: str) -> list[Problem]:
    problems = []
    if not image.base.startswith(FROM_SCHEMES):
        where = f"{path}.from" if isinstance(image.from_, str) else f"{path}.from.uri"
        problems.append(Problem(where, f"build from docker://REF or fuzzball://user/NAME; got `{image.base}`"))
    if image.scope is not None and image.scope not in SCOPES:
        problems.append(Problem(f"{path}.scope", f"scope is user or group, not {image.scope}"))
    if image.ttl is not None:
        try:
            if parse_duration(image.ttl) <= 0:
                problems.append(Problem(f"{path}.ttl", "a ttl is a positive duration such as 24h"))
        except DurationError as error:
            problems.append(Problem(f"{path}.ttl", str(error)))
    for target, item in (image.files or {}).items():
        where = join(join(path, "files"), target)
        if not target.startswith("/") or ".." in target.split("/") or target.strip("/") == "":
            problems.append(Problem(where, "files are keyed by an absolute path in the image, without `..`"))
        if (item.content is None) == (item.source is None):
            problems.append(Problem(where, "give either `content` or `source: file://NAME`"))
        elif item.source is not None and item.source.removeprefix(FILE) not in (workflow.files or {}):
            problems.append(Problem(f"{where}.source", f"`{item.source}` names no entry of the top-level `files`"))
        if item.mode is not None and not 0 <= item.mode <= 0o7777:
            problems.append(Problem(f"{where}.mode", "a mode is a number from 0 to 0o7777, e.g. 0o755 (493)"))
    return problems


def _cycles(workflow: Workflow) -> list[Problem]:
    """Images built from each other in a loop, named in the order they refer to each other."""
    images = workflow.images or {}
    problems, reported = [], set()
    for start in images:
        trail = [start]
        while (base := own_image(workflow, images[trail[-1]].base)) is not None and base not in trail:
            trail.append(base)
        if base is not None and base in trail:
            cycle = trail[trail.index(base):] + [base]
            if frozenset(cycle) not in reported:
                reported.add(frozenset(cycle))
                problems.append(Problem(join("images", base), f"images are built from each other in a cycle: "
                                                              f"{' -> '.join(cycle)}"))
    return problems
