"""git clone or fetch with its progress told as it goes: git's own `Receiving objects:  45% (123/273), 1.20 MiB |
600.00 KiB/s` lines (it redraws them with carriage returns), each handed to `tell`, so a person waiting on a
catalog refresh sees bytes, rate and how far along it is. Under the same time limit as a quiet git."""

from __future__ import annotations

import os
import re
import subprocess
import threading
from collections import deque
from collections.abc import Callable, Mapping
from pathlib import Path

Tell = Callable[[str], None]
STEPS = re.compile(r"^(?:remote: )?(Counting objects|Compressing objects|Receiving objects|Resolving deltas|"
                   r"Enumerating objects|Updating files):")
KEPT = 20  # git's last lines kept for an error message


class TimedOut(Exception):
    """git ran past its time limit and was killed."""


def told_run(command: list[str], cwd: Path | None, env: Mapping[str, str], timeout: float, tell: Tell
             ) -> tuple[int, list[str]]:
    """(exit code, git's last lines) of `command` (a clone or fetch given `--progress`), each progress line told."""
    process = subprocess.Popen(command, cwd=cwd, env=dict(env), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE)
    said: deque[str] = deque(maxlen=KEPT)
    reader = threading.Thread(target=read_lines, args=(process, said, tell), name="git-progress", daemon=True)
    reader.start()
    try:
        code = process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
        raise TimedOut from None
    finally:
        reader.join(timeout=5)
        if process.stderr is not None:
            process.stderr.close()
    return code, list(said)


def read_lines(process: subprocess.Popen[bytes], said: deque[str], tell: Tell) -> None:
    """git's standard error split at carriage returns as well as newlines: each redraw is a line of its own."""
    if process.stderr is None:
        return
    buffer = b""
    while chunk := os.read(process.stderr.fileno(), 4096):
        *lines, buffer = re.split(rb"[\r\n]", buffer + chunk)
        for line in lines:
            heard(line, said, tell)
    heard(buffer, said, tell)


def heard(line: bytes, said: deque[str], tell: Tell) -> None:
    text = line.decode("utf-8", errors="replace").strip()
    if not text:
        return
    said.append(text)
    if STEPS.match(text):
        tell(text.removeprefix("remote: "))
