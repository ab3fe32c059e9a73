"""The node's image cache stays under its size limit by evicting the least recently used image no job holds."""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import shutil
import tarfile
import tempfile
import time
from pathlib import Path

import pytest

from adapters.runtime.images import ImageCache, machine_has
from api.agent.args import parse_args
from tests.integration.test_isolation_image import Registry, _blob

SIZE = 256 * 1024  # each test image is one file of this many random bytes


def tiny_layout(layout: Path, tag: str) -> None:
    """An OCI layout whose one layer is a file of random bytes: every image gets its own digest."""
    (layout / "blobs" / "sha256").mkdir(parents=True)
    buffer, data = io.BytesIO(), os.urandom(SIZE)
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        info = tarfile.TarInfo("payload")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    raw = buffer.getvalue()
    layer = _blob(layout, gzip.compress(raw, mtime=0))
    config = _blob(layout, json.dumps({"architecture": "amd64", "os": "linux", "rootfs": {
        "type": "layers", "diff_ids": [f"sha256:{hashlib.sha256(raw).hexdigest()}"]}}).encode())
    manifest = _blob(layout, json.dumps({
        "schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {"mediaType": "application/vnd.oci.image.config.v1+json", **config},
        "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip", **layer}]}).encode())
    (layout / "index.json").write_text(json.dumps({"schemaVersion": 2, "manifests": [{
        "mediaType": "application/vnd.oci.image.manifest.v1+json", **manifest,
        "annotations": {"org.opencontainers.image.ref.name": tag}}]}))
    (layout / "oci-layout").write_text('{"imageLayoutVersion": "1.0.0"}')


@pytest.fixture(scope="module")
def images():
    """Four distinct images (a, b, c, d) in a loopback registry."""
    if missing := machine_has("skopeo", "docker-registry"):
        pytest.skip(f"missing {', '.join(missing)}: apt-get install skopeo docker-registry")
    scratch = Path(tempfile.mkdtemp(prefix="roving-cache-"))
    registry = Registry(scratch)
    try:
        refs = {}
        for name in "abcd":
            tiny_layout(scratch / name, "1")
            refs[name] = registry.push(scratch / name, "1", f"roving/{name}")
        yield refs
    finally:
        registry.stop()
        shutil.rmtree(scratch, ignore_errors=True)


def cached(cache: ImageCache, images: dict[str, str]) -> set[str]:
    held = {}
    for name, ref in images.items():
        key = hashlib.sha256(ref.removeprefix("docker://").encode()).hexdigest()
        if (cache.directory / "refs" / key).exists():
            held[name] = (cache.directory / "refs" / key).read_text()
    return {name for name, digest in held.items() if (cache.directory / "images" / digest / "rootfs").is_dir()}


def use(cache: ImageCache, ref: str) -> None:
    cache.release(cache.rootfs(ref))
    time.sleep(0.02)  # distinct use times, even on a coarse clock


def test_the_least_recently_used_image_goes_when_the_cache_outgrows_its_limit(tmp_path, images):
    cache = ImageCache(tmp_path / "cache", limit=int(2.5 * SIZE) + 64 * 1024)
    use(cache, images["a"])
    use(cache, images["b"])
    use(cache, images["a"])  # a is used again: b is now the least recently used
    use(cache, images["c"])
    assert cached(cache, images) == {"a", "c"}
    assert sum(size for _, size in cache.usage().values()) <= cache.limit


def test_an_image_in_use_is_never_evicted_and_goes_once_its_job_ends(tmp_path, images):
    cache = ImageCache(tmp_path / "cache", limit=int(1.5 * SIZE))
    running = cache.rootfs(images["a"])  # a job runs in it
    use(cache, images["b"])
    use(cache, images["c"])
    assert "a" in cached(cache, images) and (running.rootfs / "payload").stat().st_size == SIZE
    cache.release(running)
    use(cache, images["d"])
    assert cached(cache, images) == {"d"}


def test_an_image_used_again_after_its_eviction_is_pulled_again(tmp_path, images):
    cache = ImageCache(tmp_path / "cache", limit=int(1.5 * SIZE))
    use(cache, images["a"])
    use(cache, images["b"])
    again = cache.rootfs(images["a"])
    assert again.seconds > 0 and (again.rootfs / "payload").exists()
    cache.release(again)


def test_without_a_limit_nothing_is_evicted(tmp_path, images):
    cache = ImageCache(tmp_path / "cache")
    for name in "abc":
        use(cache, images[name])
    assert cached(cache, images) == {"a", "b", "c"}


def test_the_limit_is_read_from_the_environment_with_units():
    config = parse_args(["--api", "http://cp:8080", "--cpus", "2", "--memory", "1GiB", "--device", "x=1"],
                        env={"ROVING_TOKEN": "t", "ROVING_IMAGE_CACHE_BYTES": "20GiB"}, euid=1000)
    assert config.image_cache_bytes == 20 * 2**30
