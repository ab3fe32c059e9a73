"""Reading catalog sources: a folder on this host, or a git repository kept as a shallow checkout.

A folder is read as it is on every request (templates are small; an edit shows at once). A git source is cloned
into `<data dir>/catalog/<source id>` on first use and fetched again once its checkout is older than
`refresh_seconds`; a fetch that fails keeps serving the last checkout and says so only when there is none. git runs
without a terminal or credential prompts, with a time limit, limited to the https, http, ssh, git and file
protocols, following no HTTP redirect. Each file a template name needs is read with a size cap; a directory with
thousands of files is cut off.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import random
import shutil
import subprocess
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from adapters.git_progress import STEPS, Tell, TimedOut, told_run
from domain.app.catalog import CatalogHandlers, SourceUnreadable
from domain.app.catalog_access import shown_location
from domain.app.errors import Conflict
from domain.app.roving import Roving
from domain.catalog import TemplateFiles
from domain.catalog.source import CatalogSource, SourceKind

SUFFIX = ".template.yaml"
MAX_FILE_BYTES = 1024 * 1024
MAX_TEMPLATES = 2000
MAX_DEPTH, MAX_ENTRIES = 4, 20_000
GIT_ENV = {"GIT_TERMINAL_PROMPT": "0", "GIT_ASKPASS": "/bin/true", "SSH_ASKPASS": "/bin/true",
           "GIT_ALLOW_PROTOCOL": "https:http:ssh:git:file", "GIT_SSH_COMMAND": "ssh -o BatchMode=yes"}
# An allowed host must not send git on to one that is not (catalog.allowedSources): no HTTP redirects are followed.
NO_REDIRECTS = ("-c", "http.followRedirects=false")


def open_catalog(uow: Roving, listed: Callable[[], Iterable[CatalogSource]], data_dir: Path | str,
                 refresh_seconds: float = 60.0) -> CatalogHandlers:
    """The catalog handlers for one control plane: git checkouts under `<data dir>/catalog`, randomness (sprig's
    randInt, which templates use for ports and keys) from the operating system."""
    rng = random.SystemRandom()
    return CatalogHandlers(uow, CatalogStore(Path(data_dir) / "catalog", refresh_seconds), listed, rng.randrange)


class CatalogStore:
    def __init__(self, cache_dir: Path | str, refresh_seconds: float = 60.0, timeout: float = 60.0) -> None:
        self.cache_dir, self.refresh_seconds, self.timeout = Path(cache_dir), refresh_seconds, timeout

    def templates(self, source: CatalogSource) -> list[TemplateFiles]:
        if source.kind is SourceKind.FOLDER:
            return read_folder(Path(source.location))
        return read_folder(self._checkout(checkout_key(source), source.location, source.ref))

    def refresh(self, source: CatalogSource, tell: Tell | None = None) -> None:
        """A git source fetched now, whatever its checkout's age, git's progress lines told; a fetch that fails
        says why (the last checkout still serves listings). A folder is read as it is on every request already."""
        if source.kind is not SourceKind.FOLDER:
            self._checkout(checkout_key(source), source.location, source.ref, now=True, tell=tell)

    def check(self, kind: SourceKind, location: str, ref: str) -> None:
        if kind is SourceKind.FOLDER:
            read_folder(Path(location))
            return
        heads = self._git(["ls-remote", "--", location, *([ref] if ref else ["HEAD"])], None)
        if ref and not heads.strip():
            raise SourceUnreadable(f"{shown_location(location)} has no branch or tag {ref!r}")

    def _checkout(self, key: str, location: str, ref: str, now: bool = False, tell: Tell | None = None) -> Path:
        target = self.cache_dir / key
        self.cache_dir.mkdir(parents=True, exist_ok=True)
        with open(self.cache_dir / f"{key}.lock", "a") as lock:
            _locked(lock, waits=not now)  # API workers share the data dir: one clone or fetch at a time
            stamp = target / ".git" / "roving-fetched"
            if not now and stamp.exists() and time.time() - stamp.stat().st_mtime < self.refresh_seconds:
                return target
            try:
                self._refresh(target, location, ref, tell)
            except SourceUnreadable:
                if now or not stamp.exists():
                    raise
                return target  # the last checkout serves until the repository answers again
            stamp.touch()
            return target

    def _refresh(self, target: Path, location: str, ref: str, tell: Tell | None = None) -> None:
        branch = ["--branch", ref] if ref else []
        quiet = ["--progress"] if tell is not None else ["--quiet"]
        if not (target / ".git").is_dir():
            shutil.rmtree(target, ignore_errors=True)
            self._git(["clone", *quiet, "--depth", "1", *branch, "--", location, str(target)], None, tell)
            return
        self._git(["fetch", *quiet, "--depth", "1", "origin", ref or "HEAD"], target, tell)
        self._git(["reset", "--quiet", "--hard", "FETCH_HEAD"], target)

    def _git(self, args: list[str], cwd: Path | None, tell: Tell | None = None) -> str:
        if tell is not None:
            return self._told(args, cwd, tell)
        try:
            done = subprocess.run(["git", *NO_REDIRECTS, *args], cwd=cwd, capture_output=True, text=True, timeout=self.timeout,
                                  env={**os.environ, **GIT_ENV}, stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            raise SourceUnreadable(f"git {args[0]} took longer than {self.timeout:g} s") from None
        except OSError as error:
            raise SourceUnreadable(f"cannot run git: {error.strerror}") from None
        if done.returncode != 0:
            said = [line for line in done.stderr.splitlines() if line.strip()]
            raise SourceUnreadable(f"git {args[0]} failed: {shown_location(said[-1] if said else 'no message')}")
        return done.stdout

    def _told(self, args: list[str], cwd: Path | None, tell: Tell) -> str:
        """A clone or fetch whose progress lines are told as git writes them."""
        try:
            code, said = told_run(["git", *NO_REDIRECTS, *args], cwd, {**os.environ, **GIT_ENV}, self.timeout, tell)
        except TimedOut:
            raise SourceUnreadable(f"git {args[0]} took longer than {self.timeout:g} s") from None
        except OSError as error:
            raise SourceUnreadable(f"cannot run git: {error.strerror}") from None
        if code != 0:
            shown = [line for line in said if not STEPS.match(line)] or said
            raise SourceUnreadable(f"git {args[0]} failed: {shown_location(shown[-1] if shown else 'no message')}")
        return ""


def _locked(lock: Any, waits: bool) -> None:
    """A listing waits for the fetch under way (it needs the checkout); a refresh asked meanwhile is refused at
    once: each one queued would hold a server worker thread for as long as git may take, and a manager asking
    many times at once would hold them all."""
    try:
        fcntl.flock(lock, fcntl.LOCK_EX if waits else fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        raise Conflict("a refresh of this source is under way: its answer shows in the catalog when it ends") from None


def checkout_key(source: CatalogSource) -> str:
    return hashlib.sha256(f"{source.id}\n{source.location}\n{source.ref}".encode()).hexdigest()[:24]


def read_folder(root: Path) -> list[TemplateFiles]:
    """Every `NAME.template.yaml` under `root` (not in dot-directories) with its `NAME.values.yaml` and optional
    `NAME.metadata.yaml` beside it; a template without a values file is read with none (it takes no values)."""
    if not root.is_dir():
        raise SourceUnreadable(f"{root} is not a readable folder")
    found = []
    for path in _template_paths(root)[:MAX_TEMPLATES]:
        name = path.name.removesuffix(SUFFIX)
        found.append(TemplateFiles(name, _read(path), _read(path.with_name(f"{name}.values.yaml")),
                                   _read(path.with_name(f"{name}.metadata.yaml"))))
    return found


def _template_paths(root: Path) -> list[Path]:
    """The template files under `root`, at most MAX_DEPTH folders down, looking at no more than MAX_ENTRIES names:
    a source pointed at a large tree (`/`, a home directory) is refused quickly instead of walked for minutes."""
    found, seen = [], 0
    for folder, dirs, files in os.walk(root, onerror=_unlistable):
        depth = len(Path(folder).relative_to(root).parts)
        dirs[:] = sorted(d for d in dirs if not d.startswith(".")) if depth < MAX_DEPTH else []
        seen += len(dirs) + len(files)
        if seen > MAX_ENTRIES:
            raise SourceUnreadable(f"{root} holds more than {MAX_ENTRIES} files and folders; point the source at "
                                   "the catalog's own folder")
        found += [Path(folder) / name for name in files if name.endswith(SUFFIX)]
    return sorted(found)


def _unlistable(error: OSError) -> None:
    raise SourceUnreadable(f"cannot list {error.filename}: {error.strerror}")


def _read(path: Path) -> str:
    try:
        with path.open("rb") as handle:
            data = handle.read(MAX_FILE_BYTES + 1)
    except FileNotFoundError:
        return ""
    except OSError as error:
        raise SourceUnreadable(f"cannot read {path.name}: {error.strerror}") from None
    if len(data) > MAX_FILE_BYTES:
        raise SourceUnreadable(f"{path.name} is over {MAX_FILE_BYTES} bytes")
    return data.decode("utf-8", errors="replace")
