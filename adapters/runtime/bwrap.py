"""The `oci` runtime: a job's argv run under bubblewrap in its image's root, with its work directory bound in.

The image's root is bound read-only: it is shared by every job of that image on the node. /tmp is a private
tmpfs; the work root is a tmpfs too, so the stage's directory (bound at the same path as on the host, so paths
in the spec mean the same inside) gets its mount point without writing into the shared root. The job gets its
own pid, mount, ipc, uts, user and cgroup namespaces; the network is shared unless the stage asks for isolation.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from adapters.pull_progress import Tell
from adapters.registry_auth import Credential
from adapters.runtime.images import ImageCache, Pulled


class OciRuntime:
    """Turns (argv, image) into a bubblewrap command line, pulling the image into the node cache first."""

    name = "oci"

    def __init__(self, cache: ImageCache, workdir_root: Path, bwrap: str = "bwrap") -> None:
        self.cache, self.workdir_root, self.bwrap = cache, Path(workdir_root), bwrap

    def prepare(self, image: str, mounts: Sequence[str] = (), credential: Credential | None = None,
                tell: Tell | None = None) -> Pulled:
        """The image's root, with the mount points the read-only bind cannot create at run time (volumes' too)."""
        return self.points(self.cache.rootfs(image, credential, tell), mounts)

    def points(self, pulled: Pulled, mounts: Sequence[str] = ()) -> Pulled:
        """Makes the mount points in an image's root (one pulled, or one a workflow built)."""
        points = ["proc", "dev", "tmp", *(m.strip("/") for m in mounts if m.strip("/"))]
        if not self.workdir_root.is_relative_to("/tmp"):  # under /tmp it lands on that tmpfs
            points.append(str(self.workdir_root.relative_to("/")))
        for point in points:
            if ".." not in Path(point).parts:  # a mount point is made inside the image's root, never beside it
                (pulled.rootfs / point).mkdir(parents=True, exist_ok=True)
        return pulled

    def wrap(self, argv: list[str], rootfs: Path, workdir: Path, cwd: Path, isolated_network: bool,
             gpus: Sequence[str] = (), mounts: dict[str, Path] | None = None) -> list[str]:
        """`mounts`: path in the job -> the volume's directory on the node, bound read-write there."""
        command = [self.bwrap, "--unshare-all", "--die-with-parent", "--ro-bind", str(rootfs), "/",
                   "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"]
        for node in _gpu_nodes(gpus):  # the private /dev has only the GPUs the job was given
            command += ["--dev-bind", node, node]
        if not isolated_network:
            command.append("--share-net")
        if self.workdir_root != Path("/tmp"):
            command += ["--tmpfs", str(self.workdir_root)]
        command += ["--bind", str(workdir), str(workdir)]
        for location, directory in sorted((mounts or {}).items()):
            command += ["--bind", str(directory), location]
        command += ["--chdir", str(cwd), "--", *argv]
        return command


def _gpu_nodes(gpus: Sequence[str], dev: Path = Path("/dev")) -> list[str]:
    if not gpus:
        return []
    wanted = [f"nvidia{index}" for index in gpus] + ["nvidiactl", "nvidia-uvm", "nvidia-uvm-tools"]
    return [str(dev / name) for name in wanted if (dev / name).exists()]
