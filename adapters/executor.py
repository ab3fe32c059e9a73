"""Run one stage attempt as a process group in its own cgroup, as its user, in its image when the runtime is oci."""

from __future__ import annotations

import os
import re
import threading
import time
from collections.abc import Callable
from pathlib import Path

from adapters.adoption import JobFiles, JobState, Orphan, found_jobs
from adapters.apptainer import ApptainerRuntime, env_in_image
from adapters.build_plan import BUILD, build_argv, build_env
from adapters.cgroups import Cgroup, Hierarchy, Limits
from adapters.devices import GPU, DeviceBinder, DeviceError, Gpu
from adapters.hooks import post_hook_argvs, run_post_hook, with_backoff, with_pre_hooks, write_post_hooks
from adapters.job_process import child_setup, job_state, start_process
from adapters.pull_progress import Tell, ready_text
from adapters.registry_auth import Credential, parse_credential
from adapters.running import OnExit, OnOutput, Running, pump
from adapters.runspec import (  # noqa: F401 - RunSpec, SpecError and unreachable are the executor's vocabulary too
    JobUser,
    RunSpec,
    SpecError,
    exit_code_of,
    format_seconds,
    inside,
    job_environment,
    unreachable,
    user_for,
)
from adapters.runtime.built import BuiltImages
from adapters.runtime.bwrap import OciRuntime
from adapters.runtime.host import INSTALL, HostSandbox
from adapters.runtime.images import Pulled
from adapters.stage_dir import check_findable, hand_over, image_files, job_argv, write_files
from adapters.transfer_plan import REASON_FILE, TRANSFER_KINDS, transfer_argv
from adapters.volumes import Volumes

UNSAFE_NAME = re.compile(r"[^A-Za-z0-9_.\-\[\]]")
PIDS_PER_ALLOCATION = 4096  # a fork bomb stops here, not at the node's pid_max
TRANSFER_PASSED = ("HF_ENDPOINT", "AWS_ENDPOINT_URL", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "http_proxy",
                   "https_proxy", "no_proxy", "SSL_CERT_FILE", "REQUESTS_CA_BUNDLE")


class Executor:
    """Starts RunSpecs as local process groups under `<workdir_root>/<workflow_id>/<stage>-<attempt>`, each in
    its own cgroup when `cgroups` is given."""

    def __init__(self, workdir_root: Path, kill_grace: float = 10.0, cgroups: Hierarchy | None = None,
                 user: JobUser | None = None, runtime: OciRuntime | ApptainerRuntime | None = None,
                 pids_limit: int = PIDS_PER_ALLOCATION, state_root: Path | None = None, gpus: list[Gpu] | None = None,
                 allow_root: bool = False, sandbox: HostSandbox | None = None, confined: bool = False,
                 unsandboxed: str = INSTALL):
        """`sandbox`: the host runtime's namespaces (adapters/runtime/host.py); `confined`: every host job runs in
        them (an agent that runs jobs as its own user); `unsandboxed`: why there is no sandbox (told to a stage
        that mounts volumes at their paths)."""
        self.workdir_root = Path(workdir_root).resolve()
        self.state_root = Path(state_root) if state_root else self.workdir_root / ".roving-agent" / "jobs"
        self.kill_grace, self.cgroups, self.user, self.pids_limit = kill_grace, cgroups, user, pids_limit
        self.runtime, self.allow_root = runtime, allow_root
        self.sandbox, self.confined, self.unsandboxed = sandbox, confined, unsandboxed
        self.images_url: str | None = None  # the object store of built images (the agent role's NATS URL)
        self.volumes = Volumes(self.workdir_root, user)
        self.binder = DeviceBinder(gpus) if gpus else None
        if user is not None:  # searchable, not listable: a job finds its own directory and no one else's
            self.workdir_root.mkdir(parents=True, exist_ok=True)
            if (owner := self.workdir_root.stat().st_uid) != os.geteuid():  # e.g. planted in /tmp by another user
                raise PermissionError(f"work directory {self.workdir_root} belongs to uid {owner}, not to the agent")
            self.workdir_root.chmod(0o711)

    def close(self) -> None:
        if self.cgroups is not None:
            self.cgroups.close()

    def job_user(self, spec: RunSpec) -> JobUser | None:
        """Its owner's uid and gids when this agent runs jobs as others (root), else the agent's own user."""
        return user_for(spec, self.user, self.allow_root)

    def workdir(self, spec: RunSpec) -> Path:
        workflow = UNSAFE_NAME.sub("_", spec.workflow_id).lstrip(".") or "_"
        stage = UNSAFE_NAME.sub("_", spec.stage).lstrip(".") or "_"
        # `-1`: the wire never carried an attempt (a retry is a new allocation), so every run of a stage had it;
        # a re-adopted job finds its directory under this name
        return self.workdir_root / workflow / f"{stage}-1"

    def start(self, spec: RunSpec, on_output: OnOutput, on_exit: OnExit, image_secret: str = "",
              tell: Tell | None = None) -> Running:
        """Prepare the work directory, start the process in its own session and cgroup, supervise it in threads.

        The job runs under a small shell wrapper that records its exit code, its output goes through FIFOs in
        the agent's state directory, and its state is written there: a restarted agent can adopt it. Its image
        is pulled with `image_secret` (the value of the image's registry secret), its progress told to `tell`."""
        user, workdir = self.job_user(spec), self.workdir(spec)
        workdir.mkdir(parents=True, exist_ok=True)
        transfer = spec.kind in TRANSFER_KINDS
        own_program = transfer or spec.kind == BUILD  # our code, run as the agent, in no image
        in_image = bool(spec.image) and self.runtime is not None and not own_program
        sandboxed = not (own_program or in_image) and self._sandboxes(spec)
        cwd = host_cwd = inside(workdir, spec.cwd or ".", "cwd")
        if (in_image or sandboxed) and Path(spec.cwd or ".").is_absolute():  # a path in its own root (a volume's,
            host_cwd = workdir                            # say): bubblewrap enters it; the node makes nothing outside
        host_cwd.mkdir(parents=True, exist_ok=True)
        write_files(spec, workdir)
        bound = self.volumes.prepare(spec, user)
        if transfer:
            argv = transfer_argv(spec, workdir, bound, user)
        elif spec.kind == BUILD:
            argv = build_argv(spec, workdir, self.runtime, workdir / REASON_FILE)
        else:
            argv = with_backoff(spec.start_delay_seconds or 0.0, with_pre_hooks(spec.hooks, job_argv(spec, workdir), workdir))
            write_post_hooks(spec.hooks, workdir)
        # the program the job names, checked before the sandbox's bwrap stands in front of it (a volume's path as its
        # cwd exists only in the sandbox: there only bwrap is checked)
        program = argv[0] if sandboxed and host_cwd == cwd else ""
        devices, note = self._bind(spec), ""
        pulled: Pulled | None = None
        try:
            if in_image and self.runtime is not None and spec.image:  # (what in_image says, as the types see it)
                mounts = {location: path for location, path in bound.items() if location}
                credential = parse_credential(image_secret) if image_secret else None
                began = time.monotonic()
                pulled = self._prepare(self.runtime, spec, spec.image, list(mounts), credential, tell)
                note = ready_text(spec.image, time.monotonic() - began, cached=not pulled.seconds)
                mounts.update(image_files(spec, workdir, pulled.rootfs))
                argv = self.runtime.wrap(argv, pulled.rootfs, workdir, cwd, spec.network_isolated, devices or [],
                                         mounts)
            elif sandboxed and self.sandbox is not None:  # (sandboxed needs a sandbox)
                mounts = {location: path for location, path in bound.items() if location}
                argv = self.sandbox.wrap(argv, workdir, cwd, mounts, spec.network_isolated,
                                         user=user, shared=self.workdir_root)
            elif spec.mounts and not own_program:  # never a silent ./NAME: a Fuzzfile means the same on every node
                raise SpecError(f"this node cannot mount volumes at their paths ({', '.join(sorted(spec.mounts))}): "
                                f"{self.unsandboxed}")
            if user is not None:
                hand_over(workdir, user)
            env = env_in_image(self.runtime, pulled, job_environment(spec, user, workdir, devices, workdir=workdir))
            if sandboxed:
                env.update(sandboxed_env(spec, workdir))
            if transfer:  # where this node reaches the world: a hub mirror, an S3 endpoint, a proxy
                env.update({k: os.environ[k] for k in TRANSFER_PASSED if k in os.environ})
            if spec.kind == BUILD:
                env.update(build_env(self.images_url))
            check_findable(program or argv[0], env, host_cwd)
            running = self._launch(spec, argv, host_cwd, env, workdir, user)
        except BaseException:
            self._unbind(spec)
            if pulled is not None and self.runtime is not None:  # (pulled by the runtime)
                self.runtime.cache.release(pulled)
            raise
        ran_on_host = bool(spec.image) and not pulled and not own_program
        running.pulled, running.devices, running.ran_on_host = pulled, list(devices or []), ran_on_host
        running.image_note = note
        running.files.save(job_state(running))
        self._watch(running, on_output, on_exit)
        return running

    def _sandboxes(self, spec: RunSpec) -> bool:
        """Every host job runs in its own namespaces where bubblewrap runs, as root or not: its pids, the node
        read-only, no other job's directory (without it, volumes at their paths are refused)."""
        return self.sandbox is not None

    def _mounts(self, spec: RunSpec) -> dict[str, Path]:
        """Path in the job -> the volume's directory, as `Volumes.prepare` made them for the job's start."""
        return {location: Path(spec.persistent[name].path) if name in spec.persistent
                else self.volumes.path(spec.workflow_id, name) for location, name in spec.mounts.items()}

    def _launch(self, spec: RunSpec, argv: list[str], cwd: Path, env: dict[str, str], workdir: Path,
                job_user: JobUser | None) -> Running:
        """The wrapped process in its cgroup, with its FIFOs; nothing of it is left when it cannot start."""
        cgroup = self._cgroup(spec, env.get("CUDA_VISIBLE_DEVICES"))
        return start_process(spec, argv, cwd, env, workdir, job_user, cgroup, self.state_root, self.kill_grace)

    def _prepare(self, runtime: OciRuntime | ApptainerRuntime, spec: RunSpec, image: str, mounts: list[str],
                 credential: Credential | None, tell: Tell | None) -> Pulled:
        """The job's image: pulled from its registry, or a workflow's build fetched from the object store."""
        if image.startswith("fuzzball://") and isinstance(runtime, OciRuntime):
            built = BuiltImages(runtime.cache, self.images_url)
            return runtime.points(built.rootfs(image, spec.image_owner or "", spec.image_group or ""), mounts)
        return runtime.prepare(image, mounts, credential, tell)

    def _bind(self, spec: RunSpec) -> list[str] | None:
        """The GPUs this job may see (None on a node without any); refused when too few are free."""
        count = int(spec.devices.get(GPU, 0))
        if self.binder is None:
            if count:
                raise DeviceError(f"{count} {GPU} asked for, and this node has none")
            return None
        return self.binder.bind(_holder(spec), count)

    def _unbind(self, spec: RunSpec) -> None:
        if self.binder is not None:
            self.binder.release(_holder(spec))

    def found(self) -> list[tuple[JobFiles, JobState]]:
        """The jobs a previous agent on this work directory left running (or ended unreported)."""
        return found_jobs(self.state_root)

    def adopt(self, files: JobFiles, state: JobState, on_output: OnOutput, on_exit: OnExit) -> Running:
        """Watch a job this agent did not start: its output from the FIFOs, its end from its pid and exit file."""
        cgroup = None
        if state.cgroup_dirs:
            limits = Limits(**{k: v for k, v in state.limits.items() if k in ("memory", "cpus", "pids")})
            cgroup = Cgroup(state.cgroup_version, {k: Path(v) for k, v in state.cgroup_dirs.items()}, limits)
        proc = Orphan(state.pid, state.born, files)
        running = Running(state.spec, proc, Path(state.workdir), self.kill_grace, cgroup, state.ran_on_host, files=files,
                          started_at=state.started_at)
        running.devices, running.readers = list(state.devices), files.open_readers()
        if self.binder is not None:
            self.binder.hold(_holder(state.spec), running.devices)
        if self.runtime is not None and state.image_digest:
            running.pulled = self.runtime.cache.hold(state.image_digest)
        self._watch(running, on_output, on_exit)
        return running

    def reap(self, keep: set[str]) -> list[str]:
        """Kill and remove every allocation cgroup of this agent that no adopted job owns."""
        return self.cgroups.reap(keep) if self.cgroups is not None else []

    def _watch(self, running: Running, on_output: OnOutput, on_exit: OnExit) -> None:
        """Readers for its output, and a supervisor that gives its GPUs back before its end is reported."""
        def ended(code: int, reason: str) -> None:
            self._post_hooks(running, code, reason, lambda chunk: on_output("stdout", chunk))
            self._unbind(running.spec)
            if self.runtime is not None:
                self.runtime.cache.release(running.pulled)
            on_exit(code, reason)

        threads = [threading.Thread(target=pump, args=(running.readers, on_output), daemon=True)] if running.readers else []
        for reader in threads:
            reader.start()
        threading.Thread(target=running._supervise, args=(threads, ended), daemon=True).start()

    def _post_hooks(self, running: Running, code: int, reason: str, emit: Callable[[bytes], None]) -> None:
        """Each post hook after the job's end, whatever the end: as the job's user, in its env and image, told
        how it ended (ROVING_EXIT_CODE, ROVING_EXIT_REASON), outside its cgroup (an OOM-killed job's limit is
        not the hook's), each within its own timeout."""
        spec = running.spec
        hooks = post_hook_argvs(spec.hooks, running.workdir)
        if not hooks:
            return
        cwd = inside(running.workdir, spec.cwd or ".", "cwd")
        user = self.job_user(spec)
        env = job_environment(spec, user, running.workdir, running.devices if self.binder else None,
                              workdir=running.workdir)
        env.update(ROVING_EXIT_CODE=str(code), ROVING_EXIT_REASON=reason)
        env = env_in_image(self.runtime, running.pulled, env)
        sandboxed = running.pulled is None and spec.kind not in (*TRANSFER_KINDS, BUILD) and self.sandbox is not None
        if sandboxed:
            env.update(sandboxed_env(spec, running.workdir))
        # a path in its own root (a volume's) is entered there; on the node the hook starts in the job's directory
        own_root = (sandboxed or running.pulled is not None) and Path(spec.cwd or ".").is_absolute()
        host_cwd = running.workdir if own_root else cwd
        for hook, argv in hooks:
            if running.pulled is not None and self.runtime is not None:
                argv = self.runtime.wrap(argv, running.pulled.rootfs, running.workdir, cwd, spec.network_isolated)
            elif sandboxed and self.sandbox is not None:  # the job's own sandbox: a hook reaches what the job does
                argv = self.sandbox.wrap(argv, running.workdir, cwd, self._mounts(spec), spec.network_isolated,
                                         user=user, shared=self.workdir_root)
            run_post_hook(hook, argv, host_cwd, env, child_setup(None, None, user), emit)

    def _cgroup(self, spec: RunSpec, visible: str | None) -> Cgroup | None:
        if self.cgroups is None:
            return None
        denied = tuple(self.binder.denied(visible.split(",") if visible else [])) if self.binder is not None else ()
        limits = Limits(memory=spec.memory_bytes or None, cpus=spec.cpu_cores or None, pids=self.pids_limit,
                        denied_devices=denied)
        return self.cgroups.create(f"{spec.allocation_id}-e{spec.epoch}", limits)


def sandboxed_env(spec: RunSpec, workdir: Path) -> dict[str, str]:
    """A sandboxed job's scratch is its own /tmp and its home its work directory (unless its stage says otherwise):
    the node, with the agent's HOME and TMPDIR, is read-only there."""
    return {k: v for k, v in (("TMPDIR", "/tmp"), ("HOME", str(workdir))) if k not in (spec.env or {})}


def _holder(spec: RunSpec) -> str:
    return f"{spec.allocation_id}-e{spec.epoch}"
