"""The agent's output spool: each stage attempt's output and end, appended to the node's disk as it is written,
with the offset up to which the log stream has taken it (kept across agent restarts).

A stage attempt's directory (`<state>/spool/<allocation>.<epoch>/`) holds `meta.json` (its workflow, stage and
rank), `data` (frames: a kind byte `o` stdout, `e` stderr or `E` end, the length as four big-endian bytes, then the
bytes; an end's bytes are `<ranks>\\n<reason>`) and `shipped` (`<acknowledged> <in flight>`: every frame before the
first offset is in the stream; the frames up to the second may be, and go again under the same message id)."""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote

import msgspec
import structlog

from adapters.known_files import remove_known

FRAME = 5  # kind byte + 4-byte length
MAX_FRAME = 64 * 1024  # a longer chunk is spooled as several frames, so a message of frames always fits
KINDS = {"stdout": b"o", "stderr": b"e"}
STREAMS = {b"o": "stdout", b"e": "stderr"}
END = b"E"
FILES = ("data", "meta.json", "shipped", "shipped.new", "left_out")  # all a spool's directory holds
DISK_RETRY = 1.0  # seconds between tries when the disk refuses a write (full): the job waits, nothing is lost
log = structlog.get_logger("roving.spool")


class Meta(msgspec.Struct, frozen=True):
    """Which stage's log a spool feeds."""

    workflow_id: str
    stage: str


@dataclass
class Frame:
    kind: bytes
    offset: int  # where the frame starts in `data`
    end: int  # where the next one starts
    payload: bytes

    @property
    def stream(self) -> str:
        return STREAMS.get(self.kind, "")


@dataclass
class StageSpool:
    """One stage attempt's spool; appends come from the job's reader threads, reads from the shipper."""

    root: Path
    meta: Meta
    size: int = 0
    ended: bool = False
    written: int = 0  # output bytes spooled (not counting ends)
    left_out: int = 0  # output bytes past the cluster's cap, never spooled (kept in `left_out` across restarts)
    offsets: tuple[int, int] | None = None  # `shipped`, once read
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def key(self) -> str:
        return self.root.name

    def append(self, kind: bytes, payload: bytes, cap: int = 0) -> None:
        """Frames for `payload`, on disk before this returns; a disk that refuses waits (the job's pipe fills).
        Output past `cap` bytes (0: none) is counted, not kept."""
        with self.lock:
            if cap and kind != END and self.written + len(payload) > cap:
                kept = max(0, cap - self.written)
                self.left_out += len(payload) - kept
                (self.root / "left_out").write_text(str(self.left_out))
                payload = payload[:kept]
                if not payload:
                    return
            for start in range(0, max(len(payload), 1), MAX_FRAME):
                part = payload[start:start + MAX_FRAME]
                self._write(kind + len(part).to_bytes(4, "big") + part)
            if kind == END:
                self.ended = True
            else:
                self.written += len(payload)

    def _write(self, frame: bytes) -> None:
        warned = 0.0
        while True:
            try:
                fd = os.open(self.root / "data", os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
                try:
                    os.write(fd, frame)
                finally:
                    os.close(fd)
                self.size += len(frame)
                return
            except OSError as error:
                if time.monotonic() - warned > 30:
                    log.warning("spool.write_failed", spool=self.key, error=repr(error))
                    warned = time.monotonic()
                self._truncate(self.size)  # a partial frame would garble every later one
                time.sleep(DISK_RETRY)

    def _truncate(self, size: int) -> None:
        try:
            os.truncate(self.root / "data", size)
        except OSError:
            pass

    def shipped(self) -> tuple[int, int]:
        """(acknowledged, in flight) offsets (read from disk once, then kept as they are marked)."""
        if self.offsets is None:
            try:
                done, flight = (self.root / "shipped").read_text().split()
                self.offsets = int(done), int(flight)
            except (OSError, ValueError):
                self.offsets = 0, 0
        return self.offsets

    def mark(self, done: int, flight: int, durable: bool = True) -> None:
        """Record the offsets (replaced whole, so a crash leaves the old or the new pair); not `durable`: only in
        memory (a spool about to go, whose restart would send the same message again)."""
        if durable:
            temporary = self.root / "shipped.new"
            temporary.write_text(f"{done} {flight}")
            os.replace(temporary, self.root / "shipped")
        self.offsets = done, flight

    def frames(self, start: int, limit: int, until: int | None = None) -> list[Frame]:
        """The whole frames from `start` (to `until`), their payloads `limit` bytes at most (at least one frame)."""
        found: list[Frame] = []
        with open(self.root / "data", "rb") as data:
            data.seek(start)
            total, offset = 0, start
            while offset < min(self.size, until or self.size):
                head = data.read(FRAME)
                if len(head) < FRAME:
                    break
                length = int.from_bytes(head[1:], "big")
                if found and total + length > limit:
                    break
                payload = data.read(length)
                if len(payload) < length:
                    break
                found.append(Frame(head[:1], offset, offset + FRAME + length, payload))
                total, offset = total + length, offset + FRAME + length
        return found

    def remove(self) -> None:
        """The spool's files by name (rmtree's walk costs twice as much), then its directory."""
        remove_known(self.root, FILES)


class Spool:
    """Every stage attempt's spool under one directory, found again by a restarted agent."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.stages: dict[str, StageSpool] = {}
        self.lock = threading.Lock()
        self.cap = 0  # the cluster's logs.maxBytesPerStage (0: no cap), as the control plane last said
        self.recover()

    def recover(self) -> None:
        """Take up the spools a predecessor left, cutting a frame it was writing when it died."""
        if not self.root.is_dir():
            return
        for path in sorted(self.root.iterdir()):
            try:
                meta = msgspec.json.decode((path / "meta.json").read_bytes(), type=Meta)
            except (OSError, msgspec.DecodeError, msgspec.ValidationError):
                log.warning("spool.unreadable", spool=path.name)
                continue
            stage = StageSpool(path, meta)
            stage.size, stage.ended, stage.written = _scan(path / "data")
            stage.left_out = _number(path / "left_out")
            stage._truncate(stage.size)
            self.stages[path.name] = stage

    def stage(self, key: str, meta: Meta) -> StageSpool:
        """The spool of a stage attempt (made on first use)."""
        name = quote(key, safe="")  # an allocation id never names a path outside the spool
        with self.lock:
            if (found := self.stages.get(name)) is not None:
                return found
            root, new = self._made(name)
            (root / "meta.json").write_bytes(msgspec.json.encode(meta))
            # a new spool has shipped nothing: its `shipped` file is not looked for
            found = self.stages[name] = StageSpool(root, meta, offsets=(0, 0) if new else None)
            return found

    def _made(self, name: str) -> tuple[Path, bool]:
        """A stage attempt's directory, and whether this call made it (one left unreadable on disk is taken up)."""
        root = self.root / name
        try:
            os.mkdir(root, 0o700)
        except FileNotFoundError:  # the spool's own directory first: job output, the agent's alone to read
            self.root.mkdir(mode=0o700, parents=True, exist_ok=True)
            os.mkdir(root, 0o700)
        except FileExistsError:
            return root, False
        return root, True

    def output(self, key: str, meta: Meta, stream: str, chunk: bytes) -> None:
        if chunk:
            self.stage(key, meta).append(KINDS.get(stream, b"o"), chunk, self.cap)

    def end(self, key: str, meta: Meta, reason: str, ranks: int = 1) -> int:
        """The attempt's log ends; output left out past the cap is named at its end. Returns how many bytes were."""
        stage = self.stage(key, meta)
        if stage.left_out:
            stage.append(b"e", left_out_marker(stage.left_out, self.cap or stage.written))
        stage.append(END, f"{ranks}\n{reason}".encode())
        return stage.left_out

    def pending(self) -> list[StageSpool]:
        """Spools with frames the stream has not acknowledged, oldest first."""
        with self.lock:
            stages = list(self.stages.values())
        return [stage for stage in stages if stage.shipped()[0] < stage.size]

    def shipping(self, key: str) -> bool:
        """The stage attempt's spool has frames the stream has not acknowledged."""
        with self.lock:
            stage = self.stages.get(quote(key, safe=""))
        return stage is not None and stage.shipped()[0] < stage.size

    def forget(self, stage: StageSpool) -> None:
        """A spool shipped to its end goes from disk."""
        with self.lock:
            self.stages.pop(stage.key, None)
        stage.remove()

    def on_disk(self) -> int:
        with self.lock:
            return sum(stage.size for stage in self.stages.values())


def _scan(data: Path) -> tuple[int, bool, int]:
    """(size of the whole frames, ended, output bytes) of a spool file."""
    size, ended, written = 0, False, 0
    try:
        with open(data, "rb") as file:
            while len(head := file.read(FRAME)) == FRAME:
                length = int.from_bytes(head[1:], "big")
                if len(file.read(length)) < length:
                    break
                size += FRAME + length
                ended = ended or head[:1] == END
                written += 0 if head[:1] == END else length
    except OSError:
        pass
    return size, ended, written


def left_out_marker(left_out: int, cap: int) -> bytes:
    """The line a capped log ends with."""
    return (f"\n[roving: {left_out:,} bytes of output left out of this log: past the cluster's cap of {cap:,} bytes "
            f"a stage (logs.maxBytesPerStage)]\n").encode()


def _number(path: Path) -> int:
    try:
        return int(path.read_text())
    except (OSError, ValueError):
        return 0


def end_of(payload: bytes) -> tuple[int, str]:
    """(ranks, reason) of an end frame."""
    ranks, _, reason = payload.decode(errors="replace").partition("\n")
    try:
        return max(1, int(ranks)), reason
    except ValueError:
        return 1, reason

