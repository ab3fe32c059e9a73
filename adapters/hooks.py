"""A stage's hooks on the node: pre hooks run in the job's own process before it (same user, env, cgroup, image),
post hooks run after every ending (exit, failure, timeout, OOM kill, cancel, eviction) within their own timeout.

Every line a hook prints goes to the stage's log marked `[roving pre-hook] ` or `[roving post-hook] `. The pre
hooks run under a small shell runner in front of the job's argv; a failing one ends the job with the hook's exit
code and leaves a marker file naming the hook, which the stage's exit reason then reads.
"""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Callable
from pathlib import Path

from domain.fuzzfile.hooks import PRE_HOOK_REASON
from domain.fuzzfile.stages import Hook

PRE_MARK = "[roving pre-hook] "
POST_MARK = "[roving post-hook] "
FAILED = ".roving-pre-hook-failed"
DEFAULT_SHELL = "#!/bin/sh\n"

# $1: the marker file; then (label, script, timeout seconds) per hook; then `--` and the job's argv.
PRE_RUNNER = r"""
mark=$1; shift
while [ "$1" != "--" ]; do
  label=$1; hook=$2; limit=$3; shift 3
  "$hook" >"$mark.out" 2>&1 </dev/null &
  pid=$!
  ( sleep "$limit" && : >"$mark.timeout" && kill -KILL "$pid" ) >/dev/null 2>&1 </dev/null &
  watch=$!
  wait "$pid"; rc=$?
  kill "$watch" 2>/dev/null
  while IFS= read -r line || [ -n "$line" ]; do printf '[roving pre-hook] %s\n' "$line"; done <"$mark.out"
  rm -f "$mark.out"
  if [ "$rc" -ne 0 ]; then
    if [ -e "$mark.timeout" ]; then printf 'timeout\t%s\t%s\n' "$limit" "$label" >"$mark"
    else printf 'exit\t%s\t%s\n' "$rc" "$label" >"$mark"; fi
    exit "$rc"
  fi
done
shift
exec "$@"
"""


def with_pre_hooks(hooks: list[Hook], argv: list[str], workdir: Path) -> list[str]:
    """The job's argv behind its pre hooks' runner (unchanged without pre hooks); writes their scripts."""
    pre = [h for h in hooks if h.when == "pre"]
    if not pre:
        return argv
    hooks_args: list[str] = []
    for index, hook in enumerate(pre):
        hooks_args += [hook.source, str(_script(workdir, f"pre-{index}", hook.script)), f"{hook.timeout_seconds:g}"]
    return ["/bin/sh", "-c", PRE_RUNNER, "roving-pre-hooks", str(workdir / FAILED), *hooks_args, "--", *argv]


def with_backoff(seconds: float, argv: list[str]) -> list[str]:
    """A restarted service's backoff, slept in its own process (so a cancel or an agent restart needs nothing
    more); unchanged without one."""
    if seconds <= 0:
        return argv
    return ["/bin/sh", "-c", 'sleep "$1"; shift; exec "$@"', "roving-backoff", f"{seconds:g}", *argv]


def write_post_hooks(hooks: list[Hook], workdir: Path) -> None:
    """Their scripts go in the work directory at start, so an agent that adopts the job finds them too."""
    for index, hook in enumerate(h for h in hooks if h.when == "post"):
        _script(workdir, f"post-{index}", hook.script)


def pre_hook_failure(workdir: Path) -> str | None:
    """The reason a pre hook ended the job, or None when none did."""
    try:
        kind, value, label = (workdir / FAILED).read_text().rstrip("\n").split("\t", 2)
    except (OSError, ValueError):
        return None
    if kind == "timeout":
        return f"{PRE_HOOK_REASON}{label} timed out after {value}s"
    return f"{PRE_HOOK_REASON}{label} failed: exited with code {value}"


def post_hook_argvs(hooks: list[Hook], workdir: Path) -> list[tuple[Hook, list[str]]]:
    post = [h for h in hooks if h.when == "post"]
    return [(hook, [str(workdir / f".roving-hook-post-{index}")]) for index, hook in enumerate(post)]


def run_post_hook(hook: Hook, argv: list[str], cwd: Path, env: dict[str, str],
                  setup: Callable[[], None] | None, emit: Callable[[bytes], None]) -> None:
    """Run one post hook to its end or its timeout (then its whole session is killed), its output marked."""
    try:
        proc = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, start_new_session=True,
                                preexec_fn=setup)  # noqa: PLW1509 - no locks taken in it
    except (OSError, subprocess.SubprocessError) as error:
        emit(_marked(POST_MARK, f"({hook.source}) could not start: {error}"))
        return
    try:
        output, _ = proc.communicate(timeout=hook.timeout_seconds)
        ending = f"exited with code {proc.returncode}" if proc.returncode else ""
    except subprocess.TimeoutExpired:
        _kill_session(proc.pid)
        output, _ = proc.communicate()
        ending = f"timed out after {hook.timeout_seconds:g}s"
    text = output.decode(errors="replace")
    emit(b"".join(_marked(POST_MARK, line) for line in text.splitlines()))
    if ending:
        emit(_marked(POST_MARK, f"({hook.source}) {ending}"))


def _marked(mark: str, line: str) -> bytes:
    return f"{mark}{line}\n".encode()


def _kill_session(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _script(workdir: Path, name: str, script: str) -> Path:
    path = workdir / f".roving-hook-{name}"
    path.write_text(script if script.startswith("#!") else DEFAULT_SHELL + script)
    path.chmod(0o700)
    return path
