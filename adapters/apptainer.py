"""The `apptainer` runtime: a job's image pulled once per node into a SIF file, the job run with `apptainer exec`.

The agent pulls (`apptainer pull`, as the agent, with the job's registry credential in the pull's own environment,
never the job's); the job runs `apptainer exec --containall --no-home` on the SIF, its work directory and volumes
bound in at the same paths, and `--net --network none` when its network is isolated. `--containall` cleans the
environment, so the job's own variables go in as APPTAINERENV_NAME, which apptainer sets inside.

The SIF cache: `sif/<key>.sif`, `key` the sha256 of the reference, and for a pull made with a credential of the
reference and that credential's own sha256: a job without the same credential never gets a private image another
job pulled (it pulls for itself, and the registry decides). Not evicted by size (the oci runtime's cache is).
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import subprocess
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from adapters.pull_progress import PullReport, Tell, run_following, tool_answer
from adapters.registry_auth import Credential
from adapters.runtime.images import Pulled
from adapters.runtime.registry import ImageError, is_loopback, registry_of

PULL_TIMEOUT = 1800.0
SCHEMES = ("docker://", "oras://", "library://")
KEPT = ("PATH", "LANG", "LC_ALL", "TZ")  # what apptainer itself runs with on the host


class SifCache:
    """One SIF per image (and per credential, for private ones); one pull at a time per image."""

    def __init__(self, directory: Path, apptainer: str = "apptainer", insecure: tuple[str, ...] = ()) -> None:
        self.directory, self.apptainer, self.insecure = Path(directory), apptainer, insecure
        for part in ("sif", "locks", "tmp"):
            (self.directory / part).mkdir(parents=True, exist_ok=True, mode=0o711)  # jobs read their SIF here
        self.directory.chmod(0o711)

    def key(self, image: str, credential: Credential | None) -> str:
        text = image if credential is None else f"{image}\0{_fingerprint(credential)}"
        return hashlib.sha256(text.encode()).hexdigest()

    def rootfs(self, image: str, credential: Credential | None = None, tell: Tell | None = None) -> Pulled:
        """The SIF of `image`, pulled first when this node does not have it for this credential."""
        if not image.startswith(SCHEMES):
            raise ImageError(f"image {image}: the apptainer runtime runs {', '.join(SCHEMES)} images")
        key = self.key(image, credential)
        sif = self.directory / "sif" / f"{key}.sif"
        if sif.is_file():
            return Pulled(sif, key, 0.0)
        with open(self.directory / "locks" / f"{key}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if sif.is_file():
                return Pulled(sif, key, 0.0)
            started = time.monotonic()
            self._pull(image, sif, credential, PullReport(image, tell))
            return Pulled(sif, key, time.monotonic() - started)

    def pull_command(self, image: str, target: Path) -> list[str]:
        argv = [self.apptainer, "pull", "--disable-cache"]
        registry = registry_of(image.split("://", 1)[1])
        if is_loopback(registry) or registry in self.insecure:
            argv.append("--nohttps")  # plain HTTP: loopback or declared by the admin
        return [*argv, str(target), image]

    def pull_env(self, credential: Credential | None) -> dict[str, str]:
        """The pull's environment: the agent's, with the credential where apptainer reads it (not on argv; a token
    goes as the password, which registries that take tokens, like ghcr.io and Docker Hub, accept)."""
        env = {k: v for k, v in os.environ.items() if not k.startswith(("APPTAINER_DOCKER_", "SINGULARITY_DOCKER_"))}
        if credential is not None and credential.token:
            env.update(APPTAINER_DOCKER_USERNAME="token", APPTAINER_DOCKER_PASSWORD=credential.token)
        elif credential is not None:
            env.update(APPTAINER_DOCKER_USERNAME=credential.username, APPTAINER_DOCKER_PASSWORD=credential.password)
        return env

    def _pull(self, image: str, sif: Path, credential: Credential | None, report: PullReport) -> None:
        scratch = Path(tempfile.mkdtemp(dir=self.directory / "tmp"))
        try:
            target = scratch / "image.sif"
            report.tell(f"pulling {image} with apptainer")
            try:
                code, output = run_following(self.pull_command(image, target), lambda _: None, PULL_TIMEOUT,
                                             env=self.pull_env(credential))
            except subprocess.TimeoutExpired:
                raise ImageError(f"image {image} cannot be pulled: apptainer took longer than {PULL_TIMEOUT:g}s") from None
            if code != 0 or not target.is_file():
                raise ImageError(f"image {image} cannot be pulled: {tool_answer(output, code)}")
            target.chmod(0o644)
            target.rename(sif)
        finally:
            for leftover in scratch.glob("*"):
                leftover.unlink(missing_ok=True)
            scratch.rmdir()

    def hold(self, digest: str) -> Pulled | None:
        sif = self.directory / "sif" / f"{digest}.sif"
        return Pulled(sif, digest, 0.0) if sif.is_file() else None

    def release(self, pulled: Pulled | None) -> None:
        """Nothing to give back: SIF files are not evicted."""


class ApptainerRuntime:
    """Turns (argv, SIF) into an `apptainer exec` command line."""

    name = "apptainer"

    def __init__(self, cache: SifCache, workdir_root: Path, apptainer: str = "apptainer") -> None:
        self.cache, self.workdir_root, self.apptainer = cache, Path(workdir_root), apptainer

    def prepare(self, image: str, mounts: Sequence[str] = (), credential: Credential | None = None,
                tell: Tell | None = None) -> Pulled:
        return self.cache.rootfs(image, credential, tell)

    def wrap(self, argv: list[str], rootfs: Path, workdir: Path, cwd: Path, isolated_network: bool,
             gpus: Sequence[str] = (), mounts: dict[str, Path] | None = None) -> list[str]:
        """`rootfs` is the SIF; `mounts`: path in the job -> the volume's directory on the node."""
        command = [self.apptainer, "exec", "--containall", "--no-home", "--bind", f"{workdir}:{workdir}"]
        for location, directory in sorted((mounts or {}).items()):
            command += ["--bind", f"{directory}:{location}"]
        if isolated_network:
            command += ["--net", "--network", "none"]
        if gpus:
            command.append("--nv")  # the driver's libraries; which GPUs: CUDA_VISIBLE_DEVICES, as on the host
        return [*command, "--pwd", str(cwd), str(rootfs), *argv]

    def job_env(self, env: dict[str, str]) -> dict[str, str]:
        """The job's variables as apptainer passes them through `--containall` (APPTAINERENV_NAME)."""
        kept = {k: env[k] for k in KEPT if k in env}
        return {**kept, **{f"APPTAINERENV_{k}": v for k, v in env.items()}}


def env_in_image(runtime: object, pulled: Pulled | None, env: dict[str, str]) -> dict[str, str]:
    """The env as the runtime passes it into the image: as it is for bubblewrap, as APPTAINERENV_ names for
    apptainer (its --containall cleans the rest)."""
    return runtime.job_env(env) if pulled is not None and isinstance(runtime, ApptainerRuntime) else env


def _fingerprint(credential: Credential) -> str:
    return hashlib.sha256(f"{credential.username}\0{credential.password}\0{credential.token}".encode()).hexdigest()
