"""Workflow volumes on a node: `<work root>/<workflow>/.volumes/<name>`, made before the first stage that uses one
starts here, owned by the job user, bound at each stage's mount paths, and removed once the workflow has ended.

A persistent volume (the run spec's `persistent`) is the storage provisioner's directory instead: made on first use
with its owner's ids and mode, its parents searchable only, and never removed here. A volume provisioner's
(`made`) is its program's directory, never made here."""

from __future__ import annotations

import os
import re
import shutil
import threading
from pathlib import Path

from adapters.runspec import JobUser, RunSpec
from domain.agent_start import PersistentVolume

UNSAFE_NAME = re.compile(r"[^A-Za-z0-9_.\-\[\]]")
FOLDER = ".volumes"


def safe(name: str) -> str:
    return UNSAFE_NAME.sub("_", name).lstrip(".") or "_"


class Volumes:
    def __init__(self, root: Path, user: JobUser | None = None) -> None:
        self.root, self.user = Path(root), user
        # the workflows (safe names) whose volumes are here: looked for once (an agent restarted finds what an
        # earlier one left), then kept as volumes are made and removed, so a sweep does not walk every workflow's
        # folder the node ever ran
        self.holding: set[str] | None = None
        self._looking = threading.Lock()  # starts (threads of their own) and the sweep may both look first

    def path(self, workflow_id: str, name: str) -> Path:
        return self.root / safe(workflow_id) / FOLDER / safe(name)

    def prepare(self, spec: RunSpec, user: JobUser | None = None) -> dict[str, Path]:
        """Path in the job -> the volume's directory (made when missing); a transfer's own volume as "" -> dir."""
        wanted = {location: name for location, name in spec.mounts.items()}
        if spec.volume:
            wanted[""] = spec.volume
        found: dict[str, Path] = {}
        for location, name in wanted.items():
            kept = spec.persistent.get(name)
            found[location] = Path(kept.path) if kept is not None else self.path(spec.workflow_id, name)
            if kept is not None:
                make_persistent(kept, as_root=(user or self.user) is not None)
            else:
                self._make(found[location], user or self.user)
                self._held().add(safe(spec.workflow_id))
        return found

    def _make(self, directory: Path, user: JobUser | None) -> None:
        if directory.is_dir():
            return
        directory.parent.mkdir(parents=True, exist_ok=True)
        directory.parent.chmod(0o711)  # searchable: a job reaches its own volume, lists no other
        directory.parent.parent.chmod(0o711)
        directory.mkdir(mode=0o700)
        if user is not None:
            os.chown(directory, user.uid, user.gid)

    def stale(self, workflows: set[str]) -> bool:
        """Whether a sweep keeping only `workflows` (ids) has anything to look at or remove."""
        return self.holding is None or bool(self.holding - {safe(w) for w in workflows})

    def keep_only(self, workflows: set[str]) -> list[str]:
        """Remove the volumes of every workflow not in `workflows` (ids); the ids whose volumes went."""
        holding = self._held()
        removed = sorted(holding - {safe(w) for w in workflows})
        for name in removed:
            shutil.rmtree(self.root / name / FOLDER, ignore_errors=True)
            holding.discard(name)
        return removed

    def _held(self) -> set[str]:
        with self._looking:
            if self.holding is None:
                self.holding = {folder.parent.name for folder in self.root.glob(f"*/{FOLDER}")}
            return self.holding


def make_persistent(volume: PersistentVolume, as_root: bool) -> Path:
    """The volume's directory, made on first use: its parents (the provisioner's root, the organization, the user
    or group folder) searchable and not listable, the volume its owner's with its mode. An agent that runs jobs as
    their owners (root) gives it their ids; one that runs them as itself keeps it its own."""
    directory = Path(volume.path)
    if getattr(volume, "made", False) and not directory.is_dir():  # made elsewhere: one made here is this disk
        raise FileNotFoundError(f"volume directory {directory} is not on this node: its volume provisioner made it, "
                                "so its storage is not mounted here")
    if directory.is_dir():
        # made earlier as the parent of a named volume (root's, searchable only): now the volume itself, its owner's
        if as_root and directory.stat().st_uid != volume.uid:
            os.chown(directory, volume.uid, volume.gid)
            directory.chmod(volume.mode)
        return directory
    missing = [p for p in reversed(directory.parents) if not p.exists()]
    for parent in missing:
        parent.mkdir(mode=0o711, exist_ok=True)
        parent.chmod(0o711)  # mkdir's mode is cut by the umask
    directory.mkdir(exist_ok=True)
    if as_root:
        os.chown(directory, volume.uid, volume.gid)
    directory.chmod(volume.mode)
    return directory
