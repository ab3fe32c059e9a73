"""The node's image cache: `docker://` references pulled with skopeo, unpacked once per manifest digest.

Layout under the cache directory: `refs/<sha256 of the reference>` holds the manifest digest the reference was
resolved to, `images/<digest>/rootfs` the unpacked root shared by every job of that image, `locks/` one lock
file per reference (two jobs of one image pull it once; two agents on a machine may share a cache). A tag is
resolved once per node and then served from the cache, like an `IfNotPresent` pull policy.

With a size limit (ROVING_IMAGE_CACHE_BYTES) the least recently used images are evicted once the cache
outgrows it. An image in use is never evicted: each job holds a shared lock on `locks/<digest>.use` for as
long as it runs (an adopted job's new agent takes it again), and eviction takes that lock exclusively without
waiting, so it skips what any job of any agent on the machine holds. `images/<digest>/size` is the unpacked
size, measured once; the modification time of `images/<digest>/used` is the last use.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from adapters.pull_progress import PullReport, Tell
from adapters.registry_auth import Credential, auth_file
from adapters.runtime.layers import LayerError, apply_layer
from adapters.runtime.registry import ImageError, Skopeo, oci_manifest, registry_of


@dataclass(frozen=True)
class Pulled:
    rootfs: Path
    digest: str
    seconds: float  # 0 when it came from the cache
    lease: int | None = None  # the fd holding the image's use lock while a job runs in it


class ImageCache:
    """Pull, unpack and hand out root filesystems; safe to call from many threads and processes at once."""

    def __init__(self, directory: Path, insecure: tuple[str, ...] = (), skopeo: str = "skopeo",
                 limit: int | None = None) -> None:
        self.directory = Path(directory)
        self.insecure, self.skopeo, self.limit = insecure, skopeo, limit
        self.registry = Skopeo(skopeo, insecure)
        for part in ("refs", "images", "locks", "tmp"):
            # searchable by every job user: bubblewrap, started as the job's user, binds the rootfs from here
            (self.directory / part).mkdir(parents=True, exist_ok=True, mode=0o711)
        self.directory.chmod(0o711)

    def rootfs(self, image: str, credential: Credential | None = None, tell: Tell | None = None) -> Pulled:
        """The unpacked root of `image` (`docker://REF`), pulled first when this node does not have it (with the
        job's registry `credential`, telling how far it is), held in use (not evictable) until `release`.

        An image pulled with a credential is private: a later job gets it from the cache only once the registry
        has let that job's own credential (or none) read its manifest."""
        if not image.startswith("docker://"):
            raise ImageError(f"image {image}: the oci runtime pulls docker:// references only")
        reference = image.removeprefix("docker://")
        key = hashlib.sha256(reference.encode()).hexdigest()
        if (held := self._held(self._cached(key))) is not None:
            return self._allowed(held, image, reference, key, credential)
        with open(self.directory / "locks" / f"{key}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # whoever waited here finds the image the first puller left
            if (held := self._held(self._cached(key))) is not None:
                return self._allowed(held, image, reference, key, credential)
            started = time.monotonic()
            digest = self._pull(image, reference, key, credential, PullReport(image, tell))
            pulled = self._held(Pulled(self.directory / "images" / digest / "rootfs", digest,
                                       time.monotonic() - started))
        if pulled is None:  # evicted by another agent between its unpacking and our lock: rare, and retried
            return self.rootfs(image, credential, tell)
        self.evict()
        return pulled

    def hold(self, digest: str) -> Pulled | None:
        """An adopted job's image, held in use again; None when it is no longer in the cache."""
        return self._held(Pulled(self.directory / "images" / digest / "rootfs", digest, 0.0))

    def release(self, pulled: Pulled | None) -> None:
        """The job ended: its image may be evicted again (and is, when the cache is over its limit)."""
        if pulled is not None and pulled.lease is not None:
            os.close(pulled.lease)
            self.evict()

    def _held(self, pulled: Pulled | None) -> Pulled | None:
        """`pulled` with a shared use lock taken and its use time marked; None if it was evicted meanwhile."""
        if pulled is None:
            return None
        fd = os.open(self.directory / "locks" / f"{pulled.digest}.use", os.O_RDONLY | os.O_CREAT | os.O_CLOEXEC, 0o600)
        fcntl.flock(fd, fcntl.LOCK_SH)  # waits out an eviction of this image that is under way
        if not pulled.rootfs.is_dir():
            os.close(fd)
            return None
        (pulled.rootfs.parent / "used").touch()
        return Pulled(pulled.rootfs, pulled.digest, pulled.seconds, lease=fd)

    def usage(self) -> dict[str, tuple[float, int]]:
        """digest -> (last use, bytes) of every image in the cache."""
        found = {}
        for directory in (self.directory / "images").iterdir():
            try:
                used = (directory / "used").stat().st_mtime
            except OSError:
                used = 0.0
            found[directory.name] = (used, _size_of(directory))
        return found

    def evict(self) -> list[str]:
        """Remove least recently used images no job holds until the cache fits its limit; returns them."""
        if self.limit is None:
            return []
        images = self.usage()
        total = sum(size for _, size in images.values())
        evicted = []
        for digest, (_, size) in sorted(images.items(), key=lambda item: item[1][0]):
            if total <= self.limit:
                break
            if self._remove_unused(digest):
                total -= size
                evicted.append(digest)
        return evicted

    def _remove_unused(self, digest: str) -> bool:
        fd = os.open(self.directory / "locks" / f"{digest}.use", os.O_RDONLY | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return False  # a job runs in it
            for ref in (self.directory / "refs").iterdir():
                if ref.suffix != ".tmp" and ref.read_text().strip() == digest:
                    ref.unlink(missing_ok=True)
            doomed = Path(tempfile.mkdtemp(dir=self.directory / "tmp"))
            (self.directory / "images" / digest).rename(doomed / "image")  # gone at once for every reader
            shutil.rmtree(doomed, ignore_errors=True)
            return True
        except OSError:
            return False
        finally:
            os.close(fd)

    def _cached(self, key: str) -> Pulled | None:
        try:
            digest = (self.directory / "refs" / key).read_text().strip()
        except FileNotFoundError:
            return None
        rootfs = self.directory / "images" / digest / "rootfs"
        return Pulled(rootfs, digest, 0.0) if rootfs.is_dir() else None

    def _allowed(self, held: Pulled, image: str, reference: str, key: str, credential: Credential | None) -> Pulled:
        """`held`, once this job may have it: a private image (pulled with a credential) only when the registry
        answers this job's own credential, or its lack of one (the node's own auth files do not count)."""
        if not (self.directory / "refs" / f"{key}.private").exists():
            return held
        try:
            with auth_file(credential, registry_of(reference)) as auth:
                self.registry.inspect(image, reference, auth, anonymous=True)
        except BaseException:
            if held.lease is not None:
                os.close(held.lease)
            raise
        return held

    def _pull(self, image: str, reference: str, key: str, credential: Credential | None = None,
              report: PullReport | None = None) -> str:
        report = report or PullReport(image, None)
        scratch = Path(tempfile.mkdtemp(dir=self.directory / "tmp"))
        try:
            layout = scratch / "layout"
            self.registry.copy(image, reference, layout, credential, report)
            digest, layers = oci_manifest(layout, image)
            target = self.directory / "images" / digest
            if not (target / "rootfs").is_dir():
                rootfs = scratch / "rootfs"
                rootfs.mkdir(mode=0o755)
                for index, layer in enumerate(layers, 1):
                    report.unpacking(index, len(layers))
                    try:
                        apply_layer(layer, rootfs)
                    except (LayerError, OSError) as error:
                        raise ImageError(f"image {image} cannot be unpacked: {error}") from error
                target.mkdir(mode=0o711, exist_ok=True)
                (target / "size").write_text(str(_tree_bytes(rootfs)))
                try:
                    rootfs.rename(target / "rootfs")
                except OSError:  # another reference to the same digest got there first: theirs is as good
                    pass
            if credential is not None:  # before the reference: no moment where it is cached and looks public
                (self.directory / "refs" / f"{key}.private").write_text(digest)
            tmp = self.directory / "refs" / f"{key}.tmp"
            tmp.write_text(digest)
            tmp.replace(self.directory / "refs" / key)
            return digest
        finally:
            shutil.rmtree(scratch, ignore_errors=True)


def _tree_bytes(root: Path) -> int:
    """Disk use of a tree (blocks, not apparent sizes), hard links counted once."""
    seen, total = set(), 0
    for top, dirs, files in os.walk(root):
        for name in (*dirs, *files):
            info = os.lstat(os.path.join(top, name))
            if (info.st_dev, info.st_ino) not in seen:
                seen.add((info.st_dev, info.st_ino))
                total += info.st_blocks * 512
    return total


def _size_of(image: Path) -> int:
    try:
        return int((image / "size").read_text())
    except (OSError, ValueError):  # unpacked before sizes were kept: measured once now
        size = _tree_bytes(image / "rootfs")
        try:
            (image / "size").write_text(str(size))
        except OSError:
            pass
        return size


def machine_has(*programs: str) -> list[str]:
    """Those of `programs` missing from PATH."""
    return [name for name in programs if shutil.which(name) is None]
