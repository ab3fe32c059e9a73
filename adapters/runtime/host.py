"""The `host` runtime's own namespaces: the node's root as it is, the stage's volumes at the paths its Fuzzfile names,
the node's private paths out of sight, and pids of its own.

Without them a volume mounted at `/scratch` was `./scratch` in the job's directory (a Fuzzfile meant something else on
this runtime than on `oci`), and a job of an agent that runs every job as its own user (not root) could read what that
user can: the control plane's data directory with the admin's token and the signing key, the agent's own state. Under
bubblewrap the job sees a fresh root (a tmpfs) holding every top-level directory of the node bound as it is, then
each hidden path covered by an empty tmpfs, then each volume bound read-write at its mount path; `/proc` is its own
pid namespace's, so no other process (nor its command line or environment) shows. As root, bubblewrap needs no user
namespace; as another user it needs unprivileged user namespaces (Debian allows them), and `usable` says whether it
runs here at all.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

INSTALL = "install bubblewrap (apt-get install bubblewrap)"
OWN = frozenset({"proc", "dev"})  # made by bubblewrap itself


class HostSandbox:
    """Turns a host job's argv into a bubblewrap command line; `hidden` paths show as empty directories."""

    def __init__(self, bwrap: str, hidden: tuple[Path, ...] = (), root: Path = Path("/")) -> None:
        self.bwrap, self.root = bwrap, root
        self.hidden = tuple(sorted({Path(p).resolve() for p in hidden}))

    @classmethod
    def found(cls, hidden: tuple[Path, ...] = ()) -> HostSandbox | None:
        """The sandbox when bubblewrap is installed and runs for this user, else None."""
        bwrap = shutil.which("bwrap")
        if bwrap is None:
            return None
        sandbox = cls(bwrap, hidden)
        return sandbox if sandbox.usable() else None

    def usable(self) -> bool:
        try:
            done = subprocess.run(self.wrap(["/bin/true"], Path("/"), Path("/"), {}), capture_output=True, timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            return False
        return done.returncode == 0

    def wrap(self, argv: list[str], workdir: Path, cwd: Path, mounts: dict[str, Path],
             isolated_network: bool = False, hide: bool = True) -> list[str]:
        """`mounts`: path in the job -> the volume's directory on the node. The network is the node's unless the
        stage asks for its own. `hide`: cover the hidden paths (a job running as another user than the agent cannot
        reach them anyway, and could not even make their mount points)."""
        command = [self.bwrap, "--die-with-parent", "--unshare-pid", "--unshare-ipc", "--tmpfs", "/"]
        command += self._node_root()
        command += ["--dev-bind", "/dev", "/dev", "--proc", "/proc"]
        if isolated_network:
            command.append("--unshare-net")
        for hidden in self.hidden if hide else ():
            if workdir == hidden or workdir.is_relative_to(hidden):  # never over the job's own directory
                continue
            if hidden.is_dir():
                command += ["--tmpfs", str(hidden)]  # an empty directory where it was
            elif hidden.exists():
                command += ["--ro-bind", "/dev/null", str(hidden)]  # a file (a token): empty
        for location, directory in sorted(mounts.items()):
            command += ["--bind", str(directory), location]
        return [*command, "--chdir", str(cwd), "--", *argv]

    def _node_root(self) -> list[str]:
        """Every top-level entry of the node's root, as it is: directories bound read-write (the job's uid is what
        limits it, as on the host), symbolic links (a merged /usr's /bin) made again."""
        found = []
        for entry in sorted(self.root.iterdir()):
            if entry.name in OWN:
                continue
            if entry.is_symlink():
                found += ["--symlink", os.readlink(entry), f"/{entry.name}"]
            elif entry.is_dir():
                found += ["--bind", str(entry), f"/{entry.name}"]
        return found
