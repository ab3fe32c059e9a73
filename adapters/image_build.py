"""The program a `build:NAME` stage runs (`python -m adapters.image_build PLAN`): an image built from its base,
its files and its post script, stored in the object cache, or served from there when the recipe is unchanged.

Each step prints a `build ...` line (the stage's progress events); the post script's output is the stage's log.
The post script runs as root inside a confined container: bubblewrap with every namespace unshared (the
network too unless the image asks for it), uid 0 inside mapped to an unprivileged uid outside when the agent is
root, the image's root bound read-write as / and nothing of the host's. The image tar is deterministic: sorted
entries, mtime 0, owned by root.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path
from typing import Any

from adapters.object_cache import Entry, ImageStore, image_object, ref_object
from adapters.runtime.built import BuiltImages
from adapters.runtime.images import ImageCache, Pulled
from adapters.runtime.registry import ImageError
from domain.fuzzfile.images import referenced_image

BUILD_UID = 65534  # who a root agent's builds are, outside their container
URL_ENV = "ROVING_IMAGES_URL"
PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


class BuildFailed(Exception):
    """The build cannot go on; the message names the image and what went wrong."""


def say(text: str) -> None:
    print(f"build {text}", flush=True)


def recipe_key(plan_digest: str, base_digest: str) -> str:
    return hashlib.sha256(f"{plan_digest}\n{base_digest}".encode()).hexdigest()


def places(plan: dict[str, Any], owner: str, group: str) -> list[str]:
    """The names a build is known by: its owner's, and its group's when shared with the group."""
    own = [ref_object("user", owner, plan["name"])]
    return own + ([ref_object("group", group, plan["name"])] if plan.get("scope") == "group" and group else [])


async def build(job: dict[str, Any], store: ImageStore) -> str:
    """Builds or finds the image; returns the stage's closing words."""
    plan, owner, group = job["plan"], job["owner"], job.get("group", "")
    cache = ImageCache(Path(job["image_cache"]), tuple(job.get("insecure", ())))
    built = BuiltImages(cache)
    scratch = Path(tempfile.mkdtemp(dir=cache.directory / "tmp"))
    scratch.chmod(0o711)  # bubblewrap, started as the build's unprivileged uid, reaches the root through it
    try:
        return await _build(plan, owner, group, cache, built, store, scratch, job.get("bwrap", "bwrap"))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


async def _build(plan: dict[str, Any], owner: str, group: str, cache: ImageCache, built: BuiltImages,
                 store: ImageStore, scratch: Path, bwrap: str) -> str:
    name = plan["name"]
    say(f"pulling base {plan['source']}")
    base = await _base(plan["source"], cache, built, store, owner, group)
    try:
        key = recipe_key(plan["digest"], base.digest)
        own = places(plan, owner, group)
        found = await store.cached(own[-1], key)
        if found is not None:
            for place in own:
                await store.name(place, found)
            return f"image {name} served from cache (built {_when(found.built)})"
        rootfs = scratch / "rootfs"
        say("copying base")
        shutil.copytree(base.rootfs, rootfs, symlinks=True)
    finally:
        cache.release(base)
    write_files(rootfs, plan.get("files", {}), plan.get("modes", {}), name)
    if plan.get("post"):
        say("running post")
        run_post(rootfs, plan["post"], bool(plan.get("network")), bwrap, name)
    now = time.time()
    entry = Entry(key, image_object(key, now), now, owner, plan.get("scope", "user"), plan.get("ttl_seconds"))
    tar = scratch / "image.tar"
    pack(rootfs, tar)
    say(f"storing {tar.stat().st_size / 1e6:.1f} MB")
    with open(tar, "rb") as data:
        await store.put_image(entry, data)
    for place in own:
        await store.name(place, entry)
    built.install(rootfs, entry)  # this node runs it without fetching it back
    return f"image {name} built and stored ({tar.stat().st_size / 1e6:.1f} MB)"


async def _base(source: str, cache: ImageCache, built: BuiltImages, store: ImageStore, owner: str,
                group: str) -> Pulled:
    if source.startswith("docker://"):
        return await asyncio.to_thread(cache.rootfs, source)
    entry = await store.resolve(referenced_image(source) or "", owner, group)
    return await built.unpacked(store, entry)


def _when(epoch: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch))


def write_files(rootfs: Path, files: dict[str, str], modes: dict[str, int], name: str) -> None:
    """Each file at its path in the image; no symlink on the way (a base image's link must not lead a write out)."""
    for path, content in files.items():
        target = rootfs / path.lstrip("/")
        for parent in [*reversed(target.relative_to(rootfs).parents), target.relative_to(rootfs)]:
            if (rootfs / parent).is_symlink():
                raise BuildFailed(f"image {name}: files: /{parent} is a symlink in the base image; "
                                  f"write the file at its target instead")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content)
        target.chmod(modes.get(path, 0o644))


def run_post(rootfs: Path, script: str, network: bool, bwrap: str, name: str) -> None:
    """The post script as root in the image, its output to ours (the stage's log)."""
    as_nobody = os.geteuid() == 0
    if as_nobody:
        _chown_tree(rootfs, BUILD_UID)
    argv = [bwrap, "--unshare-all", "--unshare-user", "--uid", "0", "--gid", "0", "--die-with-parent",
            "--bind", str(rootfs), "/", "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp", "--chdir", "/"]
    if network:
        argv.append("--share-net")
    argv += ["--", "/bin/sh", "-c", script]

    def drop() -> None:
        os.setgroups([])
        os.setgid(BUILD_UID)
        os.setuid(BUILD_UID)

    done = subprocess.run(argv, env={"PATH": PATH, "HOME": "/root"}, preexec_fn=drop if as_nobody else None,
                          check=False)
    if as_nobody:
        _chown_tree(rootfs, 0)
    if done.returncode != 0:
        raise BuildFailed(f"image {name}: post exited with code {done.returncode}")


def _chown_tree(root: Path, uid: int) -> None:
    os.lchown(root, uid, uid)
    for top, dirs, files in os.walk(root):
        for entry in (*dirs, *files):
            os.lchown(os.path.join(top, entry), uid, uid)


def pack(rootfs: Path, tar_path: Path) -> None:
    """A deterministic tar of `rootfs`: sorted, mtime 0, owned by root."""
    def tidy(info: tarfile.TarInfo) -> tarfile.TarInfo:
        info.mtime, info.uid, info.gid, info.uname, info.gname = 0, 0, 0, "", ""
        return info

    with tarfile.open(tar_path, "w", format=tarfile.PAX_FORMAT) as tar:
        for top, dirs, files in os.walk(rootfs):
            dirs.sort()
            for entry in sorted([*dirs, *files]):
                path = Path(top) / entry
                if path.is_symlink() or path.is_dir() or path.is_file():  # no device nodes: --dev gives /dev
                    tar.add(path, str(path.relative_to(rootfs)), recursive=False, filter=tidy)


async def _main(job: dict[str, Any]) -> str:
    url = os.environ.get(URL_ENV, "")
    if not url:
        raise BuildFailed(f"image {job['plan']['name']}: this node has no connection to the image store")
    store = await ImageStore.connect(url)
    try:
        return await build(job, store)
    finally:
        await store.close()


def _unwind(*_: object) -> None:
    """A canceled build is TERMed (by its process group and again by its cgroup): unwind once, killing the post
    script and removing the scratch copy, with any later TERM ignored so it cannot cut the cleanup short."""
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    sys.exit(128 + signal.SIGTERM)


def main(plan_path: str) -> int:
    signal.signal(signal.SIGTERM, _unwind)
    job = json.loads(Path(plan_path).read_text())
    reason = Path(job["reason_file"])
    try:
        said = asyncio.run(_main(job))
    except (BuildFailed, ImageError) as error:
        reason.write_text(str(error))
        print(error, file=sys.stderr, flush=True)
        return 1
    except Exception as error:  # noqa: BLE001 - the stage fails naming the image, never with a traceback only
        said = f"image {job['plan']['name']}: {type(error).__name__}: {error}"
        reason.write_text(said)
        print(said, file=sys.stderr, flush=True)
        return 1
    reason.write_text(said)
    say(said)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
