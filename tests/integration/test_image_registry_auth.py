"""Private images: a loopback docker-registry with htpasswd auth, pulled with the job's image secret, told as it goes.

The pull passes the credential to skopeo in an auth file (0600, removed after), never on its command line; a wrong
or missing credential fails the stage naming the image and the registry's answer, never the secret; a private image
in the node's cache is served only to jobs whose own credential the registry accepts.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from adapters import cgroups
from adapters.executor import Executor, JobUser
from adapters.runtime.bwrap import OciRuntime
from adapters.runtime.images import ImageCache
from adapters.runtime.registry import ImageError
from tests.integration.test_executor import Recorder, spec
from tests.integration.test_isolation_image import MARKER, build_layout, needs

PASSWORD = "hunter2-never-shown"
SECRET = f"alice:{PASSWORD}"


def bcrypt(password: str) -> str:
    """docker-registry's htpasswd takes bcrypt only: libcrypt (libxcrypt) makes it, no Python package needed."""
    lib = ctypes.CDLL(ctypes.util.find_library("crypt"))
    lib.crypt_gensalt.restype, lib.crypt.restype = ctypes.c_char_p, ctypes.c_char_p
    lib.crypt_gensalt.argtypes = [ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p, ctypes.c_int]
    lib.crypt.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
    return lib.crypt(password.encode(), lib.crypt_gensalt(b"$2y$", 5, None, 0)).decode()


class PrivateRegistry:
    """docker-registry on a free loopback port that answers only alice (htpasswd), storage in `directory`."""

    def __init__(self, directory: Path) -> None:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self.address = f"127.0.0.1:{self.port}"
        (directory / "htpasswd").write_text(f"alice:{bcrypt(PASSWORD)}\n")
        config = directory / "config.yml"
        config.write_text(f"version: 0.1\nstorage:\n  filesystem:\n    rootdirectory: {directory / 'store'}\n"
                          f"http:\n  addr: {self.address}\n"
                          f"auth:\n  htpasswd:\n    realm: roving\n    path: {directory / 'htpasswd'}\n")
        self.log = open(directory / "registry.log", "wb")  # noqa: SIM115 - closed in stop()
        self.process = subprocess.Popen(["docker-registry", "serve", str(config)], stdout=self.log,
                                        stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                return
            except OSError:
                time.sleep(0.05)
        raise TimeoutError("docker-registry did not listen")

    def push(self, layout: Path, tag: str, name: str) -> str:
        subprocess.run(["skopeo", "copy", "--quiet", "--dest-tls-verify=false", "--dest-creds", SECRET,
                        f"oci:{layout}:{tag}", f"docker://{self.address}/{name}:{tag}"], check=True,
                       capture_output=True)
        return f"docker://{self.address}/{name}:{tag}"

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(10)
        self.log.close()


@pytest.fixture(scope="module")
def private():
    needs("bwrap", "skopeo", "docker-registry", "busybox")
    scratch = Path(tempfile.mkdtemp(prefix="roving-private-registry-"))
    build_layout(scratch / "layout", "1.0")
    registry = PrivateRegistry(scratch)
    try:
        yield registry, registry.push(scratch / "layout", "1.0", "team/busybox")
    finally:
        registry.stop()
        shutil.rmtree(scratch, ignore_errors=True)


@pytest.fixture
def node():
    """An oci executor whose skopeo is a wrapper recording each command line and the auth file's mode (in a
    directory the job user can search: bubblewrap, started as that user, binds the image's root from it)."""
    tmp_path = Path(tempfile.mkdtemp(prefix="roving-oci-auth-"))
    tmp_path.chmod(0o755)
    calls = tmp_path / "skopeo-calls"
    wrapper = tmp_path / "skopeo"
    wrapper.write_text('#!/bin/sh\necho "$@" >> ' + str(calls) + '\nfor a in "$@"; do case "$a" in\n'
                       '  --*authfile=*) f="${a#*=}"; echo "authfile $f $(stat -c %a "$f")" >> ' + str(calls) + ';;\n'
                       'esac; done\nexec skopeo "$@"\n')
    wrapper.chmod(0o755)
    hierarchy, _ = cgroups.detect(f"test-auth-{tmp_path.name}")
    runtime = OciRuntime(ImageCache(tmp_path / "images", skopeo=str(wrapper)), (tmp_path / "work").resolve())
    executor = Executor(tmp_path / "work", kill_grace=0.3, cgroups=hierarchy, runtime=runtime,
                        user=JobUser(uid=65534, gid=65534, name="nobody"))
    yield executor, calls
    if hierarchy is not None:
        hierarchy.close()
    shutil.rmtree(tmp_path, ignore_errors=True)


def start(executor: Executor, image: str, secret: str = "", n: int = 1):
    """(recorder, result, running, told lines) of one job of `image` started with `secret`."""
    recorder, told = Recorder(), []
    running = executor.start(spec(image=image, allocation_id=f"alloc-{n}", stage=f"s{n}",
                                  script="cat /etc/roving-test-image; echo \"secret=${ROVING_IMAGE_SECRET:-none}\""),
                             recorder.output, recorder.exit, secret, told.append)
    result = running.wait(60)
    return recorder, result, running, told


def test_the_right_secret_pulls_the_private_image_and_the_pull_is_told_as_it_goes(private, node):
    executor, calls = node
    _, image = private
    recorder, result, running, told = start(executor, image, SECRET)
    assert result == (0, "exited with code 0"), recorder.text("stderr")
    assert recorder.text().splitlines() == [MARKER.strip(), "secret=none"]  # its image, and no credential in env
    assert told == [f"pulling {image}: 1 blob to fetch", f"pulling {image}: 1 of 1 blobs",
                    f"unpacking {image}: layer 1 of 1"]
    assert running.image_note.startswith(f"image {image} ready in ") and running.image_note.endswith("(pulled)")
    logged = calls.read_text()
    assert PASSWORD not in logged and "alice" not in logged  # never on a command line `ps` shows
    modes = [line.split() for line in logged.splitlines() if line.startswith("authfile ")]
    assert modes and all(mode == "600" for _, _, mode in modes)
    assert not any(Path(path).exists() for _, path, _ in modes)  # removed after the pull


def test_a_second_job_with_the_secret_is_served_from_the_cache_and_says_cached(private, node):
    executor, _ = node
    _, image = private
    start(executor, image, SECRET, n=1)
    recorder, result, running, told = start(executor, image, SECRET, n=2)
    assert result == (0, "exited with code 0"), recorder.text("stderr")
    assert running.image_note.endswith("(cached)") and not any(line.startswith("pulling") for line in told)


@pytest.mark.parametrize("secret", ["", "alice:wrong-password"], ids=["missing", "wrong"])
def test_a_missing_or_wrong_secret_fails_naming_the_image_and_the_registrys_answer(private, node, secret):
    executor, _ = node
    _, image = private
    with pytest.raises(ImageError) as refused:
        start(executor, image, secret)
    message = str(refused.value)
    assert message.startswith(f"image {image} cannot be pulled: ") and "unauthorized" in message
    assert "wrong-password" not in message and PASSWORD not in message


def test_a_private_image_in_the_cache_is_not_served_to_a_job_without_the_secret(private, node):
    executor, _ = node
    _, image = private
    start(executor, image, SECRET, n=1)
    for n, secret in ((2, ""), (3, "alice:wrong-password")):
        with pytest.raises(ImageError, match=rf"image {image} cannot be pulled: .*unauthorized"):
            start(executor, image, secret, n=n)
    assert start(executor, image, SECRET, n=4)[1] == (0, "exited with code 0")
