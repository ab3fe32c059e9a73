"""Atomic batches of the embedded one-replica log staged in memory, as nats-server stages a replicated stream's.

nats-server stages each atomic batch of a one-replica file stream in a file store of its own, under the stream's
`batches/` directory: a directory, its metadata (written through a temporary file), keys when the store is
encrypted, and their removal, for every commit. Under a burst of one-job workflows that was 72% of the embedded
server's CPU (perf: `newBatchStore` → `newFileStoreWithCreatedAndMode`, ext4 inode allocation); a 4-message batch
cost it 1.8 ms and it took ~290 batches/s one at a time. A replicated stream stages in memory instead (upstream's
pull request 7298 calls the staging on disk "the primary bottleneck").

So each stream's `batches/` of the embedded server is pointed at a private directory on tmpfs (/dev/shm): the same
files, in memory (0.6 ms a batch, ~1,300/s, ops/bench/batch_cost.py). Only what a batch stages until it commits
lives there: the committed messages go to the stream's own store as before, and a batch cut short by a crash is one
the client was never told had landed (it commits again). The server removes `batches/` whenever it loads a stream,
so the link is made again after every start (`tend`, called by the supervisor); a link whose directory went (a
cleaned /dev/shm, a reboot) is given a new one. `ROVING_NATS_BATCH_STAGING=disk` keeps the server's own staging.

Room: a tmpfs that fills (another program's files; a container's 64 MiB /dev/shm) would refuse every atomic batch
("atomic publish batch is incomplete", 10176) while the disk has room. So staging goes back to the store's disk
while the memory side has less than LOW_WATER free (each link becomes a directory again), and returns to memory
once it has HIGH_WATER free; a /dev/shm too small from the start is never used. One round of the supervisor (1 s)
is the longest a batch can meet a full memory side.

Safety: the memory side is `<tmpfs>/roving-<uid>/<digest of the store path>/`, created 0700 and used only when it
is a real directory of this user's (not a link, nobody else's, nobody else may enter), so another local user cannot
have the server stage into a directory of theirs; what is staged is encrypted when the store is.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
from collections.abc import Callable
from pathlib import Path

import structlog

from adapters.sysinfo import free_bytes

log = structlog.get_logger("roving.nats")
MEMORY = Path("/dev/shm")
BATCHES = "batches"
LOW_WATER = 16 * 2**20  # bytes free on the memory side under which batches stage on disk again
HIGH_WATER = 32 * 2**20  # ... and above which they return to memory (apart from LOW_WATER: no flapping at the edge)


def memory_dir(environ: dict[str, str] | os._Environ[str] = os.environ) -> Path | None:
    """Where staging goes, or None for the server's own (on disk): asked off, or no tmpfs here."""
    if environ.get("ROVING_NATS_BATCH_STAGING", "memory").strip().lower() == "disk":
        return None
    return MEMORY if _is_tmpfs(MEMORY) and os.access(MEMORY, os.W_OK | os.X_OK) else None


def _is_tmpfs(path: Path) -> bool:
    try:
        mounts = Path("/proc/self/mounts").read_text()
    except OSError:
        return False
    return any(fields[1] == str(path) and fields[2] == "tmpfs"
               for fields in (line.split() for line in mounts.splitlines()) if len(fields) > 2)


class BatchStaging:
    """Links the `batches/` directory of every stream in one server's store to memory (see the module's words)."""

    def __init__(self, store_dir: Path, memory: Path, low_water: int = LOW_WATER, high_water: int = HIGH_WATER) -> None:
        self.streams = store_dir / "jetstream" / "jetstream"  # the configured store_dir, then the server's own
        digest = hashlib.sha256(str(store_dir.resolve()).encode()).hexdigest()[:16]
        self.memory, self.home = memory, memory / f"roving-{os.getuid()}"
        self.root = self.home / digest
        self.low_water, self.high_water = low_water, high_water
        self.on_disk = False  # staging went back to disk for want of room in memory

    def tend(self) -> int:
        """Link every stream's staging not linked yet (or linked to a directory that went); how many were linked.
        While the memory side is short of room, unlink them instead (staging on disk) and link none."""
        if not self._roomy():
            self._each_stream(self._unlink)
            return 0
        if not self._own(self.home) or not self._own(self.root):
            return 0
        return self._each_stream(self._link)

    def _each_stream(self, change: Callable[[Path], int]) -> int:
        """`change` applied to every stream's directory; how many it changed. One that fails waits for the next
        round (a batch staging meanwhile, the stream going, or the server making it)."""
        changed = 0
        for stream in sorted(self.streams.glob("*/streams/*/")):
            try:
                changed += change(stream)
            except OSError as error:
                log.debug("nats.batch_staging_deferred", stream=stream.name, error=str(error))
        return changed

    def _roomy(self) -> bool:
        """Whether the memory side has room: HIGH_WATER free to return to it, LOW_WATER free to stay."""
        free = free_bytes(self.memory)
        if free is None:
            return False
        roomy = free >= (self.high_water if self.on_disk else self.low_water)
        if roomy == self.on_disk:  # a change either way: said once
            (log.info if roomy else log.warning)(
                "nats.batch_staging_in_memory_again" if roomy else "nats.batch_staging_on_disk",
                memory=str(self.memory), free_bytes=free, low_water=self.low_water, high_water=self.high_water)
        self.on_disk = not roomy
        return roomy

    def _unlink(self, stream: Path) -> int:
        """A link of ours becomes a directory of the store again: the server's next batch stages on disk."""
        batches = stream / BATCHES
        if not (batches.is_symlink() and Path(os.readlink(batches)).is_relative_to(self.root)):
            return 0
        batches.unlink()
        batches.mkdir(mode=0o700)
        return 1

    def close(self) -> None:
        """Remove the memory side once the server is stopped (the links left in the store are dropped by the server
        as it loads the streams next time)."""
        if self._own(self.root):
            shutil.rmtree(self.root, ignore_errors=True)

    def _link(self, stream: Path) -> int:
        batches, target = stream / BATCHES, self.root / stream.name
        if batches.is_symlink() and os.readlink(batches) == str(target) and self._own(target):
            return 0
        if not self._own(target):
            return 0
        if batches.is_symlink():
            batches.unlink()  # to a directory that went, or somewhere else: ours replaces it
        elif batches.is_dir():
            batches.rmdir()  # only when empty: a batch staging on disk now keeps it until the next round
        for left in target.iterdir():  # batches a killed server staged: never to be committed
            shutil.rmtree(left, ignore_errors=True)
        os.symlink(target, batches)
        log.info("nats.batch_staging_in_memory", stream=stream.name, at=str(target))
        return 1

    @staticmethod
    def _own(directory: Path) -> bool:
        """Make `directory` (0700) if missing; True when it is a real directory of ours that nobody else may enter."""
        try:
            directory.mkdir(mode=0o700, exist_ok=True)
            found = os.lstat(directory)
        except OSError:
            return False
        return (stat.S_ISDIR(found.st_mode) and found.st_uid == os.getuid()
                and stat.S_IMODE(found.st_mode) & 0o077 == 0)
