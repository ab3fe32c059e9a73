"""Jobs in their image: a busybox image the test builds, pushed to a loopback registry, pulled and run under bwrap."""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import shutil
import socket
import subprocess
import tarfile
import tempfile
import time
from pathlib import Path

import pytest

from adapters import cgroups
from adapters.executor import Executor, JobUser
from adapters.runtime.bwrap import OciRuntime
from adapters.runtime.images import ImageCache, machine_has
from adapters.runtime.layers import LayerError, apply_layer
from adapters.runtime.registry import ImageError
from tests.integration.test_executor import run, spec

MARKER = "roving test image\n"


def _blob(layout: Path, data: bytes) -> dict:
    digest = hashlib.sha256(data).hexdigest()
    (layout / "blobs" / "sha256" / digest).write_bytes(data)
    return {"digest": f"sha256:{digest}", "size": len(data)}


def busybox_layer() -> bytes:
    """An uncompressed tar: /bin/busybox and a link per applet, /etc/roving-test-image, /tmp."""
    buffer = io.BytesIO()
    applets = subprocess.run(["busybox", "--list"], capture_output=True, text=True, check=True).stdout.split()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for name, mode in (("bin", 0o755), ("etc", 0o755), ("tmp", 0o1777)):
            info = tarfile.TarInfo(name)
            info.type, info.mode = tarfile.DIRTYPE, mode
            tar.addfile(info)
        tar.add(shutil.which("busybox"), "bin/busybox")
        for applet in applets:
            if applet != "busybox":
                info = tarfile.TarInfo(f"bin/{applet}")
                info.type, info.linkname = tarfile.SYMTYPE, "busybox"
                tar.addfile(info)
        info = tarfile.TarInfo("etc/roving-test-image")
        info.size = len(MARKER)
        tar.addfile(info, io.BytesIO(MARKER.encode()))
    return buffer.getvalue()


def build_layout(layout: Path, tag: str) -> None:
    """An OCI image layout of busybox: one gzip layer, a config, a manifest and index.json naming `tag`."""
    write_layout(layout, tag, busybox_layer())


def write_layout(layout: Path, tag: str, raw: bytes) -> None:
    """An OCI image layout of the uncompressed layer `raw`, named `tag`."""
    (layout / "blobs" / "sha256").mkdir(parents=True)
    layer = _blob(layout, gzip.compress(raw, mtime=0))
    config = _blob(layout, json.dumps({
        "architecture": "amd64", "os": "linux", "config": {"Cmd": ["/bin/sh"]},
        "rootfs": {"type": "layers", "diff_ids": [f"sha256:{hashlib.sha256(raw).hexdigest()}"]}}).encode())
    manifest = _blob(layout, json.dumps({
        "schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {"mediaType": "application/vnd.oci.image.config.v1+json", **config},
        "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip", **layer}]}).encode())
    (layout / "index.json").write_text(json.dumps({"schemaVersion": 2, "manifests": [{
        "mediaType": "application/vnd.oci.image.manifest.v1+json", **manifest,
        "annotations": {"org.opencontainers.image.ref.name": tag}}]}))
    (layout / "oci-layout").write_text('{"imageLayoutVersion": "1.0.0"}')


class Registry:
    """Debian's docker-registry on a free loopback port with its storage in `directory`."""

    def __init__(self, directory: Path) -> None:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self.address = f"127.0.0.1:{self.port}"
        config = directory / "config.yml"
        config.write_text(f"version: 0.1\nstorage:\n  filesystem:\n    rootdirectory: {directory / 'store'}\n"
                          f"http:\n  addr: {self.address}\n")
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
        subprocess.run(["skopeo", "copy", "--quiet", "--dest-tls-verify=false", f"oci:{layout}:{tag}",
                        f"docker://{self.address}/{name}:{tag}"], check=True, capture_output=True)
        return f"docker://{self.address}/{name}:{tag}"

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(10)
        self.log.close()


def needs(*programs: str) -> None:
    if os.geteuid() != 0:
        pytest.skip("jobs in images under another user need root (CI runs as root)")
    if missing := machine_has(*programs):
        pytest.skip(f"missing {', '.join(missing)}: apt-get install bubblewrap skopeo docker-registry busybox-static")


@pytest.fixture(scope="module")
def image():
    needs("bwrap", "skopeo", "docker-registry", "busybox")
    scratch = Path(tempfile.mkdtemp(prefix="roving-registry-"))
    build_layout(scratch / "layout", "1.0")
    registry = Registry(scratch)
    try:
        yield registry, registry.push(scratch / "layout", "1.0", "roving/busybox")
    finally:
        registry.stop()
        shutil.rmtree(scratch, ignore_errors=True)


@pytest.fixture
def oci_executor():
    root = Path(tempfile.mkdtemp(prefix="roving-oci-"))
    root.chmod(0o755)
    hierarchy, _ = cgroups.detect(f"test-oci-{root.name}")
    runtime = OciRuntime(ImageCache(root / "images"), (root / "work").resolve())
    yield Executor(root / "work", kill_grace=0.3, cgroups=hierarchy, runtime=runtime,
                  user=JobUser(uid=65534, gid=65534, name="nobody"))
    if hierarchy is not None:
        hierarchy.close()
    shutil.rmtree(root, ignore_errors=True)


def test_a_job_runs_in_its_image_from_the_registry_and_sees_its_files_not_the_hosts(image, oci_executor):
    _, reference = image
    script = ("test -x /bin/busybox && echo busybox; cat /etc/roving-test-image; "
              "test -e /etc/os-release && echo host-os || echo no-host-os; id -u; pwd; echo out > result")
    recorder, result = run(oci_executor, spec(image=reference, script=script), timeout=60)
    workdir = oci_executor.workdir(spec())
    assert recorder.text().splitlines() == ["busybox", MARKER.strip(), "no-host-os", "65534", str(workdir)], \
        recorder.text("stderr")
    assert result == (0, "exited with code 0")
    assert (workdir / "result").read_text() == "out\n"  # the work directory is the host's, bound in


def test_a_volume_is_bound_at_its_mount_path_in_the_image_and_outlives_the_job(image, oci_executor):
    _, reference = image
    writer = spec(image=reference, mounts={"/data": "data"}, script="echo kept > /data/result; id -u")
    recorder, result = run(oci_executor, writer, timeout=60)
    assert result == (0, "exited with code 0"), recorder.text("stderr")
    volume = oci_executor.volumes.path("wf-1", "data")
    assert (volume / "result").read_text() == "kept\n" and volume.stat().st_uid == 65534
    reader = spec(image=reference, allocation_id="alloc-2", stage="report", mounts={"/inputs": "data"},
                  script="cat /inputs/result; test -e /data/result && echo also-at-data || echo only-where-mounted")
    recorder, result = run(oci_executor, reader, timeout=60)
    assert recorder.text().splitlines() == ["kept", "only-where-mounted"], recorder.text("stderr")


def test_a_second_job_of_the_image_starts_from_the_cache(image, oci_executor):
    _, reference = image
    recorder = run(oci_executor, spec(image=reference, command=["true"]), timeout=60)
    first = oci_executor.runtime.cache.rootfs(reference)
    assert first.seconds == 0.0 and (first.rootfs / "bin" / "busybox").is_file()
    assert recorder[1] == (0, "exited with code 0")


def interfaces(recorder) -> list[str]:
    return sorted(line.split(":")[0].strip() for line in recorder.text().splitlines()[2:])


def test_an_isolated_network_has_only_loopback_and_a_shared_one_has_the_nodes(image, oci_executor):
    _, reference = image
    isolated, _ = run(oci_executor, spec(image=reference, network_isolated=True, command=["cat", "/proc/net/dev"]))
    assert interfaces(isolated) == ["lo"]
    shared, _ = run(oci_executor, spec(allocation_id="alloc-2", image=reference,
                                       command=["cat", "/proc/net/dev"]))
    assert len(interfaces(shared)) > 1


def test_an_image_that_is_not_there_fails_naming_it_and_the_registrys_answer(image, oci_executor):
    registry, _ = image
    missing = f"docker://{registry.address}/roving/nothing:9"
    with pytest.raises(ImageError, match=rf"image {missing} cannot be pulled: .*(manifest unknown|not found)"):
        oci_executor.start(spec(image=missing, command=["true"]), lambda *a: None, lambda *a: None)


def _layer(path: Path, entries: list[tuple[str, str | None]]) -> Path:
    """A tar of files (content) and directories (None)."""
    with tarfile.open(path, "w") as tar:
        for name, content in entries:
            info = tarfile.TarInfo(name)
            if content is None:
                info.type, info.mode = tarfile.DIRTYPE, 0o755
                tar.addfile(info)
            else:
                info.size = len(content)
                tar.addfile(info, io.BytesIO(content.encode()))
    return path


def test_whiteouts_delete_files_and_opaque_directories_of_lower_layers(tmp_path):
    rootfs = tmp_path / "rootfs"
    rootfs.mkdir()
    apply_layer(_layer(tmp_path / "1.tar", [("a", None), ("a/keep", "k"), ("a/gone", "g"), ("b", None),
                                             ("b/old", "o")]), rootfs)
    apply_layer(_layer(tmp_path / "2.tar", [("a/.wh.gone", ""), ("b/.wh..wh..opq", ""), ("b/new", "n")]), rootfs)
    assert sorted(p.relative_to(rootfs).as_posix() for p in rootfs.rglob("*")) == ["a", "a/keep", "b", "b/new"]


def test_a_layer_cannot_write_through_a_symlink_out_of_the_root(tmp_path):
    rootfs, outside = tmp_path / "rootfs", tmp_path / "outside"
    rootfs.mkdir()
    outside.mkdir()
    with tarfile.open(tmp_path / "evil.tar", "w") as tar:
        link = tarfile.TarInfo("etc")
        link.type, link.linkname = tarfile.SYMTYPE, str(outside)
        tar.addfile(link)
    apply_layer(tmp_path / "evil.tar", rootfs)
    with pytest.raises(LayerError):
        apply_layer(_layer(tmp_path / "2.tar", [("etc/passwd", "pwned")]), rootfs)
    assert not (outside / "passwd").exists()
