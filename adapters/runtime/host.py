"""The `host` runtime's own namespaces: the node read-only, the job's own work directory and its volumes read-write
(at the paths its Fuzzfile names), a private /tmp, the node's private paths and the other jobs' directories out of
sight, and pids of its own.

Without them a volume mounted at `/scratch` was `./scratch` in the job's directory (a Fuzzfile meant something else on
this runtime than on `oci`); a job of an agent that runs every job as its own user (a normal user's `make up`) could
write what that user can: the stack's checkout, its venv (a `.pth` file there ran in the next agent, outside any
sandbox), the user's home, and the other jobs' directories under the shared work root; and a root agent's job saw
every process of the node. Under bubblewrap the job sees a fresh root (a tmpfs) holding every top-level directory of
the node bound read-only, its own /dev/shm, /tmp and /var/tmp and an empty /run (a socket or FIFO under a read-only
mount still answers: the user's session bus, docker's socket), each covered path (the agent's work
root, the hidden ones) an empty tmpfs, then its own work directory and each volume bound read-write (and the paths an
admin made writable for every job, a shared filesystem, bound before the covers); `/proc` is its
own pid namespace's, so no other process (nor its command line or environment) shows. As root, bubblewrap needs no
user namespace; as another user it needs unprivileged user namespaces (Debian allows them), and `refusal` says
whether it runs here for the jobs' user, tried the way a job starts (bwrap run as that uid).

A job's command line is made per job, but most of it is the node's and not the job's: the installation bound back
(`_programs`, resolved paths: 0.24 ms) and which hidden paths are out of the scratch mounts are fixed for the agent's
life, resolved once; the node's top-level entries (0.18 ms to list) are listed again only when the root directory
changed. Whether a hidden path exists and the job's uid reaches it is read for every job (either may change).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path

from adapters.runspec import JobUser

INSTALL = "install bubblewrap (apt-get install bubblewrap)"
OWN = frozenset({"proc", "dev", "tmp"})  # made by bubblewrap itself (the job's own)
USERNS = "as another user than root it needs unprivileged user namespaces: sysctl user.max_user_namespaces > 0"
RESOLV = Path("/etc/resolv.conf")  # may point into /run (systemd-resolved's stub-resolv.conf): kept there
RUNTIME_DIRS = ("/run", "/var/run")  # sockets and FIFOs: read-only, they still connect (a user's bus, docker's)
NAME_SERVICE = ("/run/nscd/socket", "/run/nslcd/socket")  # user and group names of a directory (LDAP): kept
PRIVATE = ("/tmp", "/var/tmp", "/dev/shm")  # scratch every job has, of its own: never another's, nor the node's
SOURCE = Path(__file__).resolve().parents[2]  # this checkout (an editable install runs from it)
SETTLED_NS = 10**9  # a directory changed longer ago than this has a time its next change cannot share (coarse clocks)


class HostSandbox:
    """Turns a host job's argv into a bubblewrap command line; `hidden` paths show as empty directories."""

    def __init__(self, bwrap: str, hidden: tuple[Path, ...] = (), writable: tuple[Path, ...] = (),
                 root: Path = Path("/")) -> None:
        """`writable`: node paths a job may write as its uid allows (an admin's shared filesystem)."""
        self.bwrap, self.root = bwrap, root
        self.hidden = tuple(sorted({Path(p).resolve() for p in hidden}))
        self.writable = tuple(sorted({Path(p).resolve() for p in writable}))
        # the interpreter and checkout this agent runs from and the node's scratch mounts stay where they are while it
        # runs: resolved here, not for every job
        self.programs = _programs()
        self.coverable = tuple(path for path in self.hidden if not _scratched(path)
                               or any(path.is_relative_to(program) for program in self.programs))
        self._listing: tuple[tuple[int, int, int], tuple[str, ...]] | None = None  # (root's stat, its arguments)

    @classmethod
    def found(cls, hidden: tuple[Path, ...] = (), writable: tuple[Path, ...] = (),
              user: JobUser | None = None) -> HostSandbox | None:
        """The sandbox when bubblewrap is installed and runs jobs of `user` here, else None."""
        return cls.probe(hidden, writable, user)[0]

    @classmethod
    def probe(cls, hidden: tuple[Path, ...] = (), writable: tuple[Path, ...] = (),
              user: JobUser | None = None) -> tuple[HostSandbox | None, str]:
        """The sandbox and '', or None and why not: bubblewrap missing, or not running for the jobs' user
        (None: the agent's own)."""
        bwrap = shutil.which("bwrap")
        if bwrap is None:
            return None, INSTALL
        sandbox = cls(bwrap, hidden, writable)
        refused = sandbox.refusal(user)
        return (None, refused) if refused else (sandbox, "")

    def refusal(self, user: JobUser | None = None) -> str:
        """Why a job of `user` could not start in this sandbox, '' when it can: tried the way jobs run it, bwrap
        started as that uid (where unprivileged user namespaces are off, bwrap runs for root and for no one else)."""
        probe = Path(tempfile.mkdtemp(prefix="roving-bwrap-"))
        other = user if user is not None and user.uid != os.geteuid() else None  # (as jobs start: setpriv to it)
        try:
            probe.chmod(0o755)  # the job's uid enters it
            argv = self.wrap(["/bin/true"], probe, probe, {}, user=user, shared=probe)
            done = subprocess.run(argv, capture_output=True, text=True, timeout=10, cwd=probe,
                                  user=other.uid if other else None, group=other.gid if other else None,
                                  extra_groups=list(other.groups) if other else None)
        except (OSError, subprocess.SubprocessError) as error:
            return f"bubblewrap did not start: {error}"
        finally:
            shutil.rmtree(probe, ignore_errors=True)
        if done.returncode == 0:
            return ""
        said = (done.stderr.strip().splitlines() or [f"exit code {done.returncode}"])[-1]
        whom = f" as the jobs' user {user.name} (uid {user.uid})" if user is not None else ""
        hint = f" ({USERNS})" if (user.uid if user is not None else os.geteuid()) != 0 else ""
        return f"bubblewrap does not run here{whom}: {said}{hint}"

    def wrap(self, argv: list[str], workdir: Path, cwd: Path, mounts: dict[str, Path],
             isolated_network: bool = False, user: JobUser | None = None, shared: Path | None = None) -> list[str]:
        """`mounts`: path in the job -> the volume's directory on the node. `shared`: the work root the job's own
        directory sits in (the other jobs' directories: not there at all). The network is the node's unless the
        stage asks for its own. `user`: whom the job runs as (None: the agent's own user)."""
        # no capability inside, whoever starts it: a root job (--allow-root-jobs) could otherwise remount the node's
        # paths read-write or unmount a cover
        command = [self.bwrap, "--die-with-parent", "--unshare-pid", "--unshare-ipc", "--cap-drop", "ALL", "--tmpfs", "/"]
        command += [*self._node_root(), *_runtime_dirs()]
        command += ["--dev-bind", "/dev", "/dev", "--proc", "/proc", *_scratch()]
        command += [arg for path in self.programs for arg in ("--ro-bind", str(path), str(path))]
        if isolated_network:
            command.append("--unshare-net")
        # before the covers: a writable path holding the work root or a hidden path does not bring them back
        command += [arg for path in self.writable if path.is_dir() for arg in ("--bind", str(path), str(path))]
        command += self._covers(user, shared)
        command += ["--bind", str(workdir), str(workdir)]  # its own, again, wherever a cover fell over it
        for location, directory in sorted(mounts.items()):
            command += ["--bind", str(directory), location]
        return [*command, "--chdir", str(cwd), "--", *argv]

    def _covers(self, user: JobUser | None, shared: Path | None) -> list[str]:
        """An empty tmpfs over the work root and each hidden directory, /dev/null over each hidden file, wherever the
        job's uid can get to them (root's always); one it cannot get to it could not read either, and bubblewrap,
        running as that uid, could not even make its mount point."""
        covered = {path for path in self.coverable if reaches(path, user)}
        covered.update((shared.resolve(),) if shared is not None else ())
        found: list[str] = []
        for path in sorted(covered):
            if path.is_dir():
                found += ["--tmpfs", str(path)]  # an empty directory where it was
            elif path.exists():
                found += ["--ro-bind", "/dev/null", str(path)]  # a file (a token): empty
        return found

    def _node_root(self) -> tuple[str, ...]:
        """Every top-level entry of the node's root, read-only (the job writes only its own directory, volumes and
        scratch, whoever its uid is), symbolic links (a merged /usr's /bin) made again.

        Listed again only when the root changed: an entry made, removed or renamed there (a symbolic link is never
        changed in place, only replaced) moves the root's modification time. A listing is kept only once that time
        is a second old, since a change within the same tick of the file system's clock would not move it."""
        seen = os.stat(self.root)
        key = (seen.st_dev, seen.st_ino, seen.st_mtime_ns)
        if (listing := self._listing) is not None and listing[0] == key:  # (read once: jobs start on several threads)
            return listing[1]
        found = _entries(self.root)
        if time.time_ns() - seen.st_mtime_ns > SETTLED_NS:
            self._listing = key, found
        return found


def _entries(root: Path) -> tuple[str, ...]:
    """The bubblewrap arguments for `root`'s top-level entries (HostSandbox._node_root)."""
    found: list[str] = []
    for entry in sorted(root.iterdir()):
        if entry.name in OWN:
            continue
        if entry.is_symlink():
            found += ["--symlink", os.readlink(entry), f"/{entry.name}"]
        elif entry.is_dir():
            found += ["--ro-bind", str(entry), f"/{entry.name}"]
    return tuple(found)


def _runtime_dirs() -> list[str]:
    """/run (and a /var/run of its own) empty: a socket there answers a job whatever the mount's read-only flag
    (/run/user/UID/bus, where `systemd-run --user` starts a process outside the sandbox; docker.sock); only the file
    /etc/resolv.conf points to there, if it does, and the name service's sockets are bound again, so host names and
    the directory's user names still resolve."""
    found = [arg for path in RUNTIME_DIRS if Path(path).is_dir() and not Path(path).is_symlink()
             for arg in ("--tmpfs", path)]
    if not found:
        return []
    resolver = Path(os.path.realpath(RESOLV))
    kept = [*((resolver,) if resolver.is_file() and resolver.is_relative_to("/run") else ()),
            *(Path(path) for path in NAME_SERVICE if Path(path).exists())]
    return found + [arg for path in kept for arg in ("--ro-bind", str(path), str(path))]


def agent_sockets(env: Mapping[str, str]) -> tuple[Path, ...]:
    """The directories of the agent's own sockets it knows of outside /run and /tmp (its ssh agent's, which may sit
    under its home): covered like hidden paths, since a read-only view still lets a job connect to them."""
    found = (Path(env[name]).parent for name in ("SSH_AUTH_SOCK",) if env.get(name, "").startswith("/"))
    return tuple(path for path in found if path != Path("/") and not path.is_relative_to("/run")
                 and not path.is_relative_to("/tmp"))


def reaches(path: Path, user: JobUser | None) -> bool:
    """Whether `user` (None: this process's own) may search every directory above `path`, by its mode bits (an ACL
    granting more is not read); root always may."""
    uid, gids = (os.geteuid(), {os.getegid(), *os.getgroups()}) if user is None else (user.uid, {user.gid, *user.groups})
    if uid == 0:
        return True
    for parent in path.parents:
        try:
            info = parent.stat()
        except OSError:
            return False
        search = 0o100 if info.st_uid == uid else 0o010 if info.st_gid in gids else 0o001
        if not info.st_mode & search:
            return False
    return True


def _scratched(path: Path) -> bool:
    """Under the job's own /tmp, /var/tmp or /dev/shm: not there at all, nothing to cover."""
    return any(path.is_relative_to(Path(scratch).resolve()) for scratch in PRIVATE)


def _programs() -> tuple[Path, ...]:
    """This installation (its checkout, venv and interpreter) where it sits in a scratch path, read-only: a job's
    /tmp is its own, and a stack run from a clone in /tmp (as CI's may be) would otherwise give its jobs no `roving`
    and no Python of its own. Hidden paths inside (a data directory in the checkout) are still covered after it."""
    found = {Path(p).resolve() for p in (SOURCE, sys.prefix, sys.base_prefix, sys.exec_prefix)}
    return tuple(sorted(path for path in found if _scratched(path) and path.is_dir()))


def _scratch() -> list[str]:
    """The job's own /tmp (always), /var/tmp and /dev/shm (where the node has them), each an empty tmpfs."""
    return [arg for path in PRIVATE if path == "/tmp" or Path(path).is_dir() for arg in ("--tmpfs", path)]
