"""Workflow volumes on a node: `<work root>/<workflow>/.volumes/<name>`, made before the first stage that uses one
starts here, owned by the job user, bound at each stage's mount paths, and removed once the workflow has ended."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

from adapters.runspec import JobUser, RunSpec, inside

UNSAFE_NAME = re.compile(r"[^A-Za-z0-9_.\-\[\]]")
FOLDER = ".volumes"


def safe(name: str) -> str:
    return UNSAFE_NAME.sub("_", name).lstrip(".") or "_"


class Volumes:
    def __init__(self, root: Path, user: JobUser | None = None) -> None:
        self.root, self.user = Path(root), user

    def path(self, workflow_id: str, name: str) -> Path:
        return self.root / safe(workflow_id) / FOLDER / safe(name)

    def prepare(self, spec: RunSpec, user: JobUser | None = None) -> dict[str, Path]:
        """Path in the job -> the volume's directory (made when missing); a transfer's own volume as "" -> dir."""
        wanted = {location: name for location, name in spec.mounts.items()}
        if spec.volume:
            wanted[""] = spec.volume
        found = {location: self.path(spec.workflow_id, name) for location, name in wanted.items()}
        for directory in found.values():
            self._make(directory, user or self.user)
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

    def link(self, workdir: Path, bound: dict[str, Path]) -> None:
        """The host runtime has no mount namespace: each mount path is re-rooted in the stage's directory as a
        symlink to its volume (as `files` are), so `data/...` from the job's directory reaches `/data`."""
        for location, directory in bound.items():
            if not location:
                continue
            link = inside(workdir, location.lstrip("/"), "mount")
            link.parent.mkdir(parents=True, exist_ok=True)
            if link.is_symlink() or link.exists():
                continue
            link.symlink_to(directory)

    def keep_only(self, workflows: set[str]) -> list[str]:
        """Remove the volumes of every workflow not in `workflows` (ids); the ids whose volumes went."""
        keep = {safe(w) for w in workflows}
        removed = []
        for folder in self.root.glob(f"*/{FOLDER}"):
            if folder.parent.name not in keep:
                shutil.rmtree(folder, ignore_errors=True)
                removed.append(folder.parent.name)
        return removed
