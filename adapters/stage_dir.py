"""A stage's directory on the node: the files and script written into it, handed to the job's user, and the
program checked before the job starts."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from adapters.runspec import JobUser, RunSpec, SpecError, inside
from domain.multinode import HOSTFILE, hostfile


def write_files(spec: RunSpec, workdir: Path) -> None:
    for name, content in (spec.files or {}).items():
        # on the host an absolute path is re-rooted: a job must not write over the node's own files
        path = inside(workdir, name.lstrip("/"), "file")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content)
    if spec.peers is not None:  # after the job's own files: FB_HOSTFILE must name the peers
        (workdir / HOSTFILE).write_text(hostfile(spec.peers))


def image_files(spec: RunSpec, workdir: Path, rootfs: Path) -> dict[str, Path]:
    """In an image, each `files` entry at an absolute path is bound there from its copy in the stage's directory
    (as Fuzzball puts it: `/tmp/x.py` is /tmp/x.py in the job). Its mount point is made in the image's root unless
    it lands on the job's private /tmp, which bubblewrap makes writable."""
    found = {}
    for name in spec.files or {}:
        if not name.startswith("/") or ".." in Path(name).parts:
            continue
        found[name] = inside(workdir, name.lstrip("/"), "file")
        point = rootfs / name.lstrip("/")
        if not Path(name).is_relative_to("/tmp") and not point.exists():
            point.parent.mkdir(parents=True, exist_ok=True)
            point.touch()
    return found


def job_argv(spec: RunSpec, workdir: Path) -> list[str]:
    """The script (given `#!/bin/sh` when it has no shebang) or command + args, never through a shell."""
    if spec.script is not None:
        script = spec.script if spec.script.startswith("#!") else "#!/bin/sh\n" + spec.script
        path = workdir / ".roving-script"
        path.write_text(script)
        path.chmod(0o700)
        return [str(path), *(spec.args or [])]
    command = [spec.command] if isinstance(spec.command, str) else list(spec.command or [])
    if not command:
        raise SpecError(f"stage {spec.stage!r} has neither a script nor a command")
    return command + list(spec.args or [])


def hand_over(workdir: Path, user: JobUser) -> None:
    """The stage's directory and everything in it belong to the job's user, closed to other users; the
    workflow's directory above stays the agent's and only searchable."""
    workdir.parent.chmod(0o711)
    uid, gid = user.uid, user.gid
    for top, dirs, files in os.walk(workdir):
        for name in (*dirs, *files):
            os.lchown(os.path.join(top, name), uid, gid)  # lchown: a symlink there is not followed
    os.chown(workdir, uid, gid)
    workdir.chmod(0o700)


def check_findable(program: str, env: dict[str, str], cwd: Path) -> None:
    """The wrapper's shell would report a missing program only as exit 127 once started: refuse it here."""
    if os.sep in program:
        program = str(cwd / program)  # relative to the job's directory, as exec resolves it
    if shutil.which(program, path=env.get("PATH", os.defpath)) is None:
        raise FileNotFoundError(2, "No such file or directory", program)
