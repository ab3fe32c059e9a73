"""An image pull as it goes: skopeo run with its output read line by line, told as "pulling IMAGE: 2 of 5 blobs",
then "unpacking IMAGE: layer 1 of 5", then how long the image took to be ready and whether it came from the cache.

`Tell` is how the lines leave: the agent forwards them as stage events (api/agent/progress.py), a few seconds
apart; a pull with no one listening tells nobody.
"""

from __future__ import annotations

import json
import re
import subprocess
import threading
from collections.abc import Callable

from adapters import net_words

Tell = Callable[[str], None]
BLOB = "Copying blob "
PINGING = re.compile(r"pinging container registry ([^\s:]+(?::\d+)?)")  # where skopeo could not reach
LOGRUS = re.compile(r'level=(?:fatal|error) msg="((?:[^"\\]|\\.)*)"')  # skopeo's `time=... level=fatal msg="..."`


def nobody(_: str) -> None:
    """The Tell of a pull no one follows."""


class PullReport:
    """Counts the blobs skopeo copies and the layers unpacked, and tells each step."""

    def __init__(self, image: str, tell: Tell | None, blobs: int | None = None) -> None:
        self.image, self.tell, self.blobs, self.copied = image, tell or nobody, blobs, 0

    def started(self) -> None:
        total = "its blobs" if self.blobs is None else f"{self.blobs} blob{'s' if self.blobs != 1 else ''}"
        self.tell(f"pulling {self.image}: {total} to fetch")

    def line(self, text: str) -> None:
        """One line of `skopeo copy` (without --quiet it names each blob as it starts copying it)."""
        if not text.startswith(BLOB):
            return
        self.copied += 1
        of = f" of {self.blobs}" if self.blobs is not None else ""
        self.tell(f"pulling {self.image}: {self.copied}{of} blobs")

    def unpacking(self, layer: int, layers: int) -> None:
        self.tell(f"unpacking {self.image}: layer {layer} of {layers}")

    def ready(self, seconds: float, cached: bool) -> str:
        text = ready_text(self.image, seconds, cached)
        self.tell(text)
        return text


def ready_text(image: str, seconds: float, cached: bool) -> str:
    return f"image {image} ready in {seconds:.1f} s ({'cached' if cached else 'pulled'})"


def layer_count(manifest: str) -> int | None:
    """The number of layer blobs of an image manifest (`skopeo inspect --raw`); None for an index or a list, whose
    image skopeo chooses for this platform."""
    try:
        found = json.loads(manifest)
    except ValueError:
        return None
    layers = found.get("layers") if isinstance(found, dict) else None
    return len(layers) if isinstance(layers, list) else None


def tool_answer(output: str, code: int) -> str:
    """The registry's answer from skopeo's (or apptainer's) output: its last line (the fatal message), or the exit
    code; a registry that cannot be reached is said in words, naming it."""
    lines = output.strip().splitlines()
    if not lines:
        return f"exit {code}"
    found = LOGRUS.search(lines[-1])
    answer = found.group(1).replace('\\"', '"') if found else lines[-1]
    words = net_words.of_text(answer)  # the registry cannot be reached: why, in words (adapters.net_words)
    if words is None:
        return answer
    where = registry_named(answer)
    return f"{words} (registry {where})" if where else words


def registry_named(answer: str) -> str | None:
    found = PINGING.search(answer)
    return found.group(1) if found else None


def run_following(argv: list[str], on_line: Callable[[str], None], timeout: float,
                  env: dict[str, str] | None = None) -> tuple[int, str]:
    """(exit code, all output) of `argv`, each output line given to `on_line` as it comes; killed after `timeout`
    seconds (subprocess.TimeoutExpired then)."""
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               stdin=subprocess.DEVNULL, env=env)
    expired = threading.Event()

    def expire() -> None:
        expired.set()
        process.kill()

    timer = threading.Timer(timeout, expire)
    timer.start()
    seen = []
    try:
        assert process.stdout is not None
        for line in process.stdout:
            seen.append(line)
            on_line(line.rstrip("\n"))
        code = process.wait()
    finally:
        timer.cancel()
        if process.stdout is not None:
            process.stdout.close()
    if expired.is_set():
        raise subprocess.TimeoutExpired(argv, timeout)
    return code, "".join(seen)
