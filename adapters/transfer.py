"""The transfer program an ingress or egress stage runs: each file moved with retries and backoff, progress as log
lines, and on failure a one-line reason naming the URI (never a secret) for the stage's exit.

    python -m adapters.transfer PLAN.json      # secrets in ROVING_TRANSFER_SECRET_<index>
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from adapters import net_words
from adapters.transfer_remote import Permanent, download, upload

ATTEMPTS = 4
BACKOFF = 0.5  # seconds before the second attempt, doubled for each next one
FILE = "file://"


class Progress:
    """`moved N of M` at most once a second, and a summary line at the end."""

    def __init__(self, label: str, every: float = 1.0) -> None:
        self.label, self.every, self.done, self.total = label, every, 0, None
        self.started = self.last = time.monotonic()

    def __call__(self, count: int) -> None:
        self.done += count
        now = time.monotonic()
        if now - self.last >= self.every:
            self.last = now
            of = f" of {_mib(self.total)} ({100 * self.done // self.total}%)" if self.total else ""
            print(f"{self.label}: {_mib(self.done)}{of}", flush=True)

    def finish(self) -> str:
        seconds = max(time.monotonic() - self.started, 1e-6)
        return f"{self.label}: done, {self.done} bytes in {seconds:.2f} s ({self.done / seconds / 2**20:.1f} MiB/s)"


def shown(uri: str) -> str:
    """The URI without user:password@ (a secret in the URI never reaches a log or a reason)."""
    parts = urlsplit(uri)
    if parts.username is None and parts.password is None:
        return uri
    host = parts.hostname or ""
    return urlunsplit((parts.scheme, host + (f":{parts.port}" if parts.port else ""), parts.path, parts.query, ""))


def in_volume(volume: Path, uri: str) -> Path:
    path = (volume / uri.removeprefix(FILE).lstrip("/")).resolve()
    if volume.resolve() not in path.parents:
        raise Permanent(f"{uri} leaves the volume")
    return path


def attempt(action: Callable[[], None], label: str, attempts: int = ATTEMPTS, backoff: float = BACKOFF) -> None:
    """Run `action`, retrying what may pass next time (network, 5xx) with doubling waits; Permanent at once."""
    for number in range(1, attempts + 1):
        try:
            action()
            return
        except Permanent:
            raise
        except Exception as error:  # noqa: BLE001 - any other failure (network, 5xx, throttling) is worth a retry
            if number == attempts:
                raise Permanent(f"{_cause(error)} (after {attempts} attempts)") from error
            wait = backoff * 2 ** (number - 1)
            print(f"{label}: attempt {number} failed ({_cause(error)}); retrying in {wait:g} s", flush=True)
            time.sleep(wait)


def move(kind: str, volume: Path, index: int, source: str, destination: str, owner: list[int] | None = None) -> None:
    secret = os.environ.get(f"ROVING_TRANSFER_SECRET_{index}", "")
    remote = source if kind == "ingress" else destination
    label = f"{kind} {shown(source)} -> {shown(destination)}"
    progress = Progress(label)
    print(f"{label}: starting", flush=True)
    if kind == "ingress":
        target = in_volume(volume, destination)
        made = _make_parents(volume, target.parent, owner)
        attempt(lambda: download(remote, target, secret, _restart(progress)), label)
        if owner is not None:
            for path in [*made, target, *(target.rglob("*") if target.is_dir() else ())]:
                os.lchown(path, *owner)
    else:
        path = in_volume(volume, source)
        if not path.is_file():
            raise Permanent(f"{source} is not a file in the volume")
        attempt(lambda: upload(path, remote, secret, _restart(progress)), label)
    print(progress.finish(), flush=True)


def _make_parents(volume: Path, directory: Path, owner: list[int] | None) -> list[Path]:
    """The directories made on the way to `directory` (to be handed to the job user too)."""
    missing = [d for d in [directory, *directory.parents] if volume.resolve() in d.parents and not d.exists()]
    directory.mkdir(parents=True, exist_ok=True)
    return missing[::-1]


def _restart(progress: Progress) -> Progress:
    progress.done, progress.total = 0, None
    return progress


def main(argv: list[str]) -> int:
    plan = json.loads(Path(argv[0]).read_text())
    volume, kind = Path(plan["volume_dir"]), plan["kind"]
    for index, transfer in enumerate(plan["transfers"]):
        remote = transfer["source"] if kind == "ingress" else transfer["destination"]
        try:
            move(kind, volume, index, transfer["source"], transfer["destination"], plan.get("owner"))
        except (Permanent, OSError) as error:
            reason = f"{kind} of {shown(remote)} failed: {_cause(error)}"
            print(reason, file=sys.stderr, flush=True)
            Path(plan["reason_file"]).write_text(reason + "\n")
            return 1
    return 0


def _cause(error: BaseException) -> str:
    words = net_words.of_error(error)
    if words is not None:
        return words
    text = str(error).strip().splitlines()
    return (text[0] if text else type(error).__name__)[:500]


def _mib(count: int | None) -> str:
    return f"{(count or 0) / 2**20:.1f} MiB"


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
