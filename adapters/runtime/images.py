"""The node's image cache: `docker://` references pulled with skopeo, unpacked once per manifest digest.

Layout under the cache directory: `refs/<sha256 of the reference>` holds the manifest digest the reference was
resolved to, `images/<digest>/rootfs` the unpacked root shared by every job of that image, `locks/` one lock
file per reference (two jobs of one image pull it once; two agents on a machine may share a cache). A tag is
resolved once per node and then served from the cache, like an `IfNotPresent` pull policy.
"""

from __future__ import annotations

import fcntl
import hashlib
import ipaddress
import json
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from adapters.runspec import SpecError
from adapters.runtime.layers import LayerError, apply_layer

PULL_TIMEOUT = 900.0


class ImageError(SpecError):
    """An image this node cannot run: the message names it and what the registry or skopeo answered."""


@dataclass(frozen=True)
class Pulled:
    rootfs: Path
    digest: str
    seconds: float  # 0 when it came from the cache


def registry_of(reference: str) -> str:
    """`127.0.0.1:5000/app:1` -> `127.0.0.1:5000`; a bare name like `alpine:3` lives on docker.io."""
    first, sep, _ = reference.partition("/")
    if sep and ("." in first or ":" in first or first == "localhost"):
        return first
    return "docker.io"


def is_loopback(registry: str) -> bool:
    host = registry.rsplit(":", 1)[0] if registry.count(":") == 1 else registry
    host = host.strip("[]")
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class ImageCache:
    """Pull, unpack and hand out root filesystems; safe to call from many threads and processes at once."""

    def __init__(self, directory: Path, insecure: tuple[str, ...] = (), skopeo: str = "skopeo") -> None:
        self.directory = Path(directory)
        self.insecure, self.skopeo = insecure, skopeo
        for part in ("refs", "images", "locks", "tmp"):
            # searchable by every job user: bubblewrap, started as the job's user, binds the rootfs from here
            (self.directory / part).mkdir(parents=True, exist_ok=True, mode=0o711)
        self.directory.chmod(0o711)

    def rootfs(self, image: str) -> Pulled:
        """The unpacked root of `image` (`docker://REF`), pulled first when this node does not have it."""
        if not image.startswith("docker://"):
            raise ImageError(f"image {image}: the oci runtime pulls docker:// references only")
        reference = image.removeprefix("docker://")
        key = hashlib.sha256(reference.encode()).hexdigest()
        if (cached := self._cached(key)) is not None:
            return cached
        with open(self.directory / "locks" / f"{key}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # whoever waited here finds the image the first puller left
            if (cached := self._cached(key)) is not None:
                return cached
            started = time.monotonic()
            digest = self._pull(image, reference, key)
            return Pulled(self.directory / "images" / digest / "rootfs", digest, time.monotonic() - started)

    def _cached(self, key: str) -> Pulled | None:
        try:
            digest = (self.directory / "refs" / key).read_text().strip()
        except FileNotFoundError:
            return None
        rootfs = self.directory / "images" / digest / "rootfs"
        return Pulled(rootfs, digest, 0.0) if rootfs.is_dir() else None

    def _pull(self, image: str, reference: str, key: str) -> str:
        scratch = Path(tempfile.mkdtemp(dir=self.directory / "tmp"))
        try:
            layout = scratch / "layout"
            argv = [self.skopeo, "copy", "--quiet"]
            registry = registry_of(reference)
            if is_loopback(registry) or registry in self.insecure:
                argv.append("--src-tls-verify=false")  # plain HTTP: loopback or declared by the admin
            argv += [f"docker://{reference}", f"oci:{layout}:image"]
            try:
                done = subprocess.run(argv, capture_output=True, text=True, timeout=PULL_TIMEOUT, check=False)
            except subprocess.TimeoutExpired:
                raise ImageError(f"image {image} cannot be pulled: skopeo took longer than {PULL_TIMEOUT:g}s") from None
            if done.returncode != 0:
                answer = (done.stderr or done.stdout).strip().splitlines()[-1:] or [f"exit {done.returncode}"]
                raise ImageError(f"image {image} cannot be pulled: {answer[0]}")
            digest, layers = self._manifest(layout, image)
            target = self.directory / "images" / digest
            if not (target / "rootfs").is_dir():
                rootfs = scratch / "rootfs"
                rootfs.mkdir(mode=0o755)
                for layer in layers:
                    try:
                        apply_layer(layer, rootfs)
                    except (LayerError, OSError) as error:
                        raise ImageError(f"image {image} cannot be unpacked: {error}") from error
                target.mkdir(mode=0o711, exist_ok=True)
                try:
                    rootfs.rename(target / "rootfs")
                except OSError:  # another reference to the same digest got there first: theirs is as good
                    pass
            tmp = self.directory / "refs" / f"{key}.tmp"
            tmp.write_text(digest)
            tmp.replace(self.directory / "refs" / key)
            return digest
        finally:
            shutil.rmtree(scratch, ignore_errors=True)

    @staticmethod
    def _manifest(layout: Path, image: str) -> tuple[str, list[Path]]:
        """The manifest digest (hex) and the layer blobs, bottom first, of the one image in an OCI layout."""
        def blob(digest: str) -> Path:
            algorithm, _, hexdigest = digest.partition(":")
            return layout / "blobs" / algorithm / hexdigest

        try:
            index = json.loads((layout / "index.json").read_text())
            digest = index["manifests"][0]["digest"]
            manifest = json.loads(blob(digest).read_text())
            layers = [blob(layer["digest"]) for layer in manifest["layers"]]
        except (OSError, ValueError, KeyError, IndexError) as error:
            raise ImageError(f"image {image}: skopeo left no readable OCI manifest ({error})") from error
        return digest.partition(":")[2], layers


def machine_has(*programs: str) -> list[str]:
    """Those of `programs` missing from PATH."""
    return [name for name in programs if shutil.which(name) is None]
