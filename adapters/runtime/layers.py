"""Unpack an OCI image's layers into a root filesystem, in order, honoring whiteouts.

A layer's `.wh.NAME` deletes NAME from the layers below, `.wh..wh..opq` empties its directory; both apply
before the layer's own files. Extraction refuses anything that would land outside the root (tarfile's `tar`
filter resolves every path), replaces an existing non-directory instead of writing through it (a symlink left by
a lower layer must not redirect a write onto the node), and skips device nodes (`--dev` provides /dev).
"""

from __future__ import annotations

import os
import posixpath
import shutil
import tarfile
from pathlib import Path

WHITEOUT = ".wh."
OPAQUE = ".wh..wh..opq"


class LayerError(ValueError):
    """A layer that cannot be unpacked safely."""


def _within(rootfs: Path, relative: str) -> Path:
    """rootfs/relative with its directory resolved, refused when a symlink would lead it out of the root."""
    target = rootfs / relative
    parent = Path(os.path.realpath(target.parent))
    if parent != rootfs and rootfs not in parent.parents:
        raise LayerError(f"layer entry {relative!r} leaves the image's root")
    return parent / target.name


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    elif os.path.lexists(path):
        path.unlink()


def _clear(directory: Path) -> None:
    if directory.is_dir() and not directory.is_symlink():
        for child in directory.iterdir():
            _remove(child)


def apply_layer(layer: Path, rootfs: Path) -> None:
    """Apply one layer (tar, gzip or not) on top of `rootfs`."""
    rootfs = Path(os.path.realpath(rootfs))
    with tarfile.open(layer, "r:*") as tar:
        keep = []
        for member in tar.getmembers():
            name = posixpath.normpath(member.name.lstrip("/"))
            directory, base = posixpath.split(name)
            if base == OPAQUE:
                _clear(_within(rootfs, name).parent)
            elif base.startswith(WHITEOUT):
                _remove(_within(rootfs, posixpath.join(directory, base[len(WHITEOUT):])))
            elif not (member.ischr() or member.isblk()) and name != ".":
                keep.append(member)
        for member in keep:
            target = _within(rootfs, posixpath.normpath(member.name.lstrip("/")))
            if os.path.lexists(target) and not (member.isdir() and target.is_dir() and not target.is_symlink()):
                _remove(target)
        try:
            tar.extractall(rootfs, members=keep, numeric_owner=True, filter="tar")
        except tarfile.FilterError as error:
            raise LayerError(str(error)) from error
