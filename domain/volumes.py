"""Persistent volumes from the local storage provisioner: what a `volume://` reference names, where its directory
lives, whom it belongs to, and the storage segment that restricts where the stages using it may run.

`volume://user/ephemeral` is the per-workflow directory on the node (adapters/volumes.py). Any other class is a
storage class of `storage.classes` (`persistent` always exists once `storage.local.root` is set):

- `volume://user/persistent[/NAME]`: the submitter's own, `<root>/<organization>/user/<uid>[/NAME]`, mode 0700;
- `volume://group/persistent/NAME`: the workflow's group's, `<root>/<organization>/group/<gid>/NAME`, mode 2770
  (files made in it keep the group);
- another class's are the same under `<root>/<organization>/class/<CLASS>/`: two classes never share a directory;

each made on first use with its owner's ids and never removed when a workflow ends. A class naming a segment
restricts every stage that mounts the volume to nodes in that segment.

A class a volume provisioner makes (domain.storage_provisioner: an admin's program, e.g. for Lustre or a cloud
volume) is bound to that provisioner's request for the volume instead: its directory is what the program answers,
and until it has, the stages that mount it wait (`pending`).
"""

from __future__ import annotations

import msgspec

from domain.fuzzfile.schema import Problem, Workflow
from domain.fuzzfile.volume_refs import EPHEMERAL_CLASS, PREFIX, Reference, parse_reference, references
from domain.storage_provisioner import volume_request

__all__ = ["Binding", "Owner", "Reference", "Storage", "bind", "parse_reference", "storage_warnings"]

DEFAULT_CLASS = "persistent"
USER_MODE, GROUP_MODE = 0o700, 0o2770


class Storage(msgspec.Struct, frozen=True, kw_only=True):
    """The cluster's provisioners: the local driver's root ("" means none) and its classes (name -> segment), and
    the classes volume provisioners make (name -> provisioner)."""

    root: str = ""
    classes: dict[str, str] = {}
    provisioned: dict[str, str] = {}

    def segment_of(self, storage_class: str) -> str | None:
        """The class's segment ("" for none), or None for a class this cluster does not have."""
        if storage_class in self.provisioned:
            return ""
        if not self.root:
            return None
        if storage_class in self.classes:
            return self.classes[storage_class]
        return "" if storage_class == DEFAULT_CLASS else None


class Owner(msgspec.Struct, frozen=True, kw_only=True):
    """Whose volumes a submission may use: the organization, the submitter's uid, the workflow's group's gid."""

    organization: str
    username: str
    uid: int | None
    group: str = ""  # the workflow's group's name, "" when the submitter is in none
    gid: int | None = None
    member: bool = False  # the submitter is (still) a member of that group


class Binding(msgspec.Struct, frozen=True, kw_only=True):
    """A persistent volume resolved at submission: its directory, owner ids, mode and segment."""

    reference: str
    path: str
    uid: int
    gid: int
    mode: int
    segment: str = ""
    provisioner: str = ""  # a provisioned class's: who makes it, and its request there (path "" until ready)
    request: str = ""

    @property
    def pending(self) -> bool:
        return bool(self.provisioner) and not self.path


def unsupported(ref: Reference, storage: Storage) -> str | None:
    """Why this cluster would run the reference as an ephemeral volume instead, or None when it can provide it."""
    if ref.ephemeral or storage.segment_of(ref.storage_class) is not None:
        return None
    if not storage.root and not storage.provisioned:
        return "this cluster has no storage provisioner (storage.local.root is not set)"
    known = ", ".join(sorted({*([DEFAULT_CLASS, *storage.classes] if storage.root else []), *storage.provisioned}))
    return f"no storage class {ref.storage_class!r} (this cluster has {known})"


def bind(workflow: Workflow, storage: Storage, owner: Owner) -> tuple[dict[str, Binding], list[Problem]]:
    """Each persistent volume's binding, and the problems that refuse the submission (field named)."""
    bindings: dict[str, Binding] = {}
    problems: list[Problem] = []
    for name, ref in references(workflow).items():
        if unsupported(ref, storage) is not None or ref.ephemeral:
            continue
        field = f"volumes.{name}.reference"
        if owner.uid is None:
            problems.append(Problem(field, f"user {owner.username} has no POSIX uid, so no persistent volume can be "
                                           f"theirs; a cluster admin sets one with `roving user update USER --uid auto`"))
            continue
        if ref.scope == "group" and (why := _not_member(owner)):
            problems.append(Problem(field, f"{PREFIX}group/... belongs to the workflow's group, and {why}"))
            continue
        bindings[name] = _binding(ref, storage, owner)
    return bindings, problems


def _not_member(owner: Owner) -> str:
    if not owner.group:
        return f"{owner.username} is a member of no group"
    if not owner.member:
        return f"{owner.username} is not a member of group {owner.group}"
    if owner.gid is None:
        return f"group {owner.group} has no POSIX gid; a cluster admin sets one with `roving group update GROUP --gid auto`"
    return ""


def _binding(ref: Reference, storage: Storage, owner: Owner) -> Binding:
    base = f"{storage.root.rstrip('/')}/{owner.organization or '_'}"
    if ref.storage_class != DEFAULT_CLASS:  # each class its own folder; `persistent` keeps the layout it always had
        base = f"{base}/class/{ref.storage_class}"
    segment = storage.segment_of(ref.storage_class) or ""
    text = f"{PREFIX}{ref.scope}/{ref.storage_class}" + (f"/{ref.name}" if ref.name else "")
    if (provisioner := storage.provisioned.get(ref.storage_class)) is not None:
        return _provisioned(ref, text, provisioner, owner)
    if ref.scope == "user":
        path = f"{base}/user/{owner.uid}" + (f"/{ref.name}" if ref.name else "")
        assert owner.uid is not None
        return Binding(reference=text, path=path, uid=owner.uid, gid=owner.uid, mode=USER_MODE, segment=segment)
    assert owner.uid is not None and owner.gid is not None
    return Binding(reference=text, path=f"{base}/group/{owner.gid}/{ref.name}", uid=owner.uid, gid=owner.gid,
                   mode=GROUP_MODE, segment=segment)


def _provisioned(ref: Reference, text: str, provisioner: str, owner: Owner) -> Binding:
    """Asked of its provisioner by the organization and owner ids it belongs to: another's is another request."""
    assert owner.uid is not None
    user = ref.scope == "user"
    gid = owner.uid if user else owner.gid
    assert gid is not None
    request = volume_request(owner.organization or "_", ref.scope, owner.uid if user else gid, ref.storage_class,
                             ref.name)
    return Binding(reference=text, path="", uid=owner.uid, gid=gid, mode=USER_MODE if user else GROUP_MODE,
                   provisioner=provisioner, request=request)


def storage_warnings(workflow: Workflow, storage: Storage, provided: set[str] | None) -> list[Problem]:
    """What this cluster will not do as written: a class it lacks (run as ephemeral instead), a segment no node
    is in (the submission is refused until one registers)."""
    found: list[Problem] = []
    for name, ref in references(workflow).items():
        field = f"volumes.{name}.reference"
        if (why := unsupported(ref, storage)) is not None:
            found.append(Problem(field, f"{PREFIX}{ref.scope}/{ref.storage_class}: {why}, so it runs as "
                                        f"{PREFIX}user/{EPHEMERAL_CLASS}: its files are removed when the workflow ends"))
        elif (segment := storage.segment_of(ref.storage_class)) and provided is not None and segment not in provided:
            found.append(Problem(field, f"storage class {ref.storage_class} is in segment {segment!r}, which no node "
                                        "provides: the submission is refused until such a node registers"))
    return found
