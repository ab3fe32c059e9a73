"""Image builds on a node: a busybox base from a loopback registry, files and a post script run as root in a
confined container, the result in JetStream's object store (reached with the agent role's credentials), then a job
in `fuzzball://user/NAME`; the same recipe on another node is served from the cache."""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
import time
from pathlib import Path

import msgspec
import nats
import pytest

from adapters import cgroups
from adapters.executor import Executor, JobUser
from adapters.nats_server import NatsServer
from adapters.nats_tls import connect_options
from adapters.object_cache import BUCKET, ensure_bucket
from adapters.runtime.bwrap import OciRuntime
from adapters.runtime.images import ImageCache
from domain.fuzzfile import parse_fuzzfile
from domain.fuzzfile.images import build_plan
from tests.integration.test_executor import Recorder, run, spec
from tests.integration.test_isolation_image import image  # noqa: F401 - the registry fixture

ALICE, BOB, LAB = "user-alice", "user-bob", "group-lab"
HOST_FILE = f"/var/tmp/roving-host-file-{os.getpid()}"

TOOLS = """
version: v4
images:
  tools:
    from: {base}
    files:
      /opt/motd: {{content: "built for roving"}}
    post: |
      echo "post runs as $(id -u)"
      mkdir -p /opt
      printf '#!/bin/sh\\necho tool ran; cat /opt/motd\\n' > /opt/tool.sh
      chmod 755 /opt/tool.sh
    scope: {scope}
  broken:
    from: {base}
    post: echo failing; exit 3
  extra:
    from: fuzzball://user/tools
    post: test -x /opt/tool.sh && echo extra > /opt/extra
  slow:
    from: {base}
    post: echo sleeping; sleep 30
  nosy:
    from: {base}
    post: test ! -e {{host_file}} && echo "host file unseen" && test "$(id -u)" = 0
jobs:
  use:
    image: {{uri: fuzzball://user/tools}}
    command: [/opt/tool.sh]
"""


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    nats_server = NatsServer(tmp_path_factory.mktemp("nats")).start()

    async def make() -> None:
        nc = await nats.connect(**connect_options(nats_server.url_for("control")))
        await ensure_bucket(nc.jetstream())
        await nc.close()

    asyncio.run(make())
    yield nats_server
    nats_server.stop()


@pytest.fixture
def node(server):
    """A fresh node: its own work directory and image cache, the agent role's URL."""
    made = []

    def make() -> Executor:
        root = Path(tempfile.mkdtemp(prefix="roving-build-"))
        root.chmod(0o755)
        hierarchy, _ = cgroups.detect(f"test-build-{root.name}")
        runtime = OciRuntime(ImageCache(root / "images"), (root / "work").resolve())
        executor = Executor(root / "work", kill_grace=0.3, cgroups=hierarchy, runtime=runtime,
                            user=JobUser(uid=65534, gid=65534, name="nobody"))
        executor.images_url = server.url_for("agent")
        made.append((root, hierarchy))
        return executor

    yield make
    for root, hierarchy in made:
        if hierarchy is not None:
            hierarchy.close()
        shutil.rmtree(root, ignore_errors=True)


def plan(base: str, name: str, scope: str = "user") -> dict:
    parsed = parse_fuzzfile(TOOLS.format(base=base, scope=scope).replace("{host_file}", HOST_FILE))
    assert parsed.errors == [], parsed.errors
    return msgspec.to_builtins(build_plan(parsed.definition, name))


def build_spec(base: str, name: str = "tools", owner: str = ALICE, scope: str = "user", attempt: int = 1):
    return spec(stage=f"build:{name}", kind="build", build=plan(base, name, scope), image_owner=owner,
                image_group=LAB, allocation_id=f"build-{name}-{attempt}")


def job_spec(owner: str = ALICE, group: str = LAB):
    return spec(stage="use", command=["/opt/tool.sh"], image="fuzzball://user/tools", image_owner=owner,
                image_group=group, uid=65534, gid=65534)


def test_a_build_runs_post_as_root_in_its_container_and_a_job_runs_the_result(image, node):  # noqa: F811
    _, base = image
    executor = node()
    started = time.monotonic()
    recorder, (code, reason) = run(executor, build_spec(base), timeout=120)
    first = time.monotonic() - started
    log = recorder.text()
    assert code == 0, (reason, log, recorder.text("stderr"))
    assert reason.startswith("image tools built and stored (")
    assert "build pulling base" in log and "build running post" in log and "build storing" in log
    assert "post runs as 0" in log
    ran, (code, reason) = run(executor, job_spec(), timeout=60)
    assert (code, ran.text()) == (0, "tool ran\nbuilt for roving"), (reason, ran.text("stderr"))

    other = node()  # same recipe, another node: served from the object store's cache
    started = time.monotonic()
    recorder, (code, reason) = run(other, build_spec(base, attempt=2), timeout=120)
    hit = time.monotonic() - started
    assert code == 0, (reason, recorder.text("stderr"))
    assert reason.startswith("image tools served from cache (built ")
    assert "running post" not in recorder.text()
    ran, (code, _) = run(other, job_spec(), timeout=60)  # fetched from the object store, unpacked, run
    assert (code, ran.text()) == (0, "tool ran\nbuilt for roving")
    print(f"\nfirst build {first:.2f}s, cache hit {hit:.2f}s")


def test_a_failing_post_fails_the_build_naming_the_image(image, node):  # noqa: F811
    _, base = image
    recorder, (code, reason) = run(node(), build_spec(base, "broken"), timeout=120)
    assert (code, reason) == (1, "image broken: post exited with code 3")
    assert "failing" in recorder.text()


def test_someone_elses_user_image_is_refused_and_a_group_image_is_shared_with_the_group(image, node):  # noqa: F811
    _, base = image
    executor = node()
    assert run(executor, build_spec(base), timeout=120)[1][0] == 0
    with pytest.raises(Exception, match=r"image fuzzball://user/tools: no live build of it for user user-bob"):
        executor.start(job_spec(owner=BOB, group="group-other"), lambda *_: None, lambda *_: None)
    built, (code, reason) = run(executor, build_spec(base, scope="group", attempt=3), timeout=120)
    assert code == 0, (reason, built.text("stderr"))
    ran, (code, _) = run(executor, job_spec(owner=BOB, group=LAB), timeout=60)
    assert (code, ran.text()) == (0, "tool ran\nbuilt for roving")


def test_the_agent_role_may_use_the_bucket_but_not_delete_it(server):
    async def attempt() -> str:
        nc = await nats.connect(**connect_options(server.url_for("agent")))
        try:
            await nc.jetstream().delete_object_store(BUCKET)
            return "deleted"
        except Exception as error:  # noqa: BLE001 - a permissions violation times out the request
            return type(error).__name__
        finally:
            await nc.close()

    assert asyncio.run(attempt()) != "deleted"


def test_an_image_built_from_an_earlier_build_starts_from_its_result(image, node):  # noqa: F811
    _, base = image
    executor = node()
    assert run(executor, build_spec(base), timeout=120)[1][0] == 0
    recorder, (code, reason) = run(node(), build_spec(base, "extra"), timeout=120)
    assert code == 0 and reason.startswith("image extra built and stored ("), (reason, recorder.text("stderr"))


def test_the_post_script_sees_nothing_of_the_host(image, node):  # noqa: F811
    _, base = image
    Path(HOST_FILE).write_text("the node's own file")
    try:
        recorder, (code, reason) = run(node(), build_spec(base, "nosy"), timeout=120)
    finally:
        os.unlink(HOST_FILE)
    assert code == 0, (reason, recorder.text(), recorder.text("stderr"))
    assert "host file unseen" in recorder.text()


def test_a_canceled_build_leaves_no_scratch_copy_behind(image, node):  # noqa: F811
    _, base = image
    executor = node()
    executor.kill_grace = 10.0  # as an agent gives it: time to unwind before KILL
    recorder = Recorder()
    running = executor.start(build_spec(base, "slow"), recorder.output, recorder.exit)
    deadline = time.monotonic() + 60
    while "sleeping" not in recorder.text() and time.monotonic() < deadline:
        time.sleep(0.05)
    running.cancel("workflow stopped")
    assert running.wait(30) == (143, "workflow stopped")
    assert list((executor.runtime.cache.directory / "tmp").iterdir()) == []
