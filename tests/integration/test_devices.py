"""GPUs: jobs on one node never share one, each sees only its own, and a GPU returns when its job ends."""

from __future__ import annotations

import asyncio
import os
import time
import uuid
from pathlib import Path

import pytest

from adapters import cgroups
from adapters.devices import DeviceBinder, DeviceError, Gpu, inventory, parse_declared
from adapters.executor import Executor
from api.agent.args import AgentConfig, parse_args
from api.agent.main import run_agent
from tests.integration.test_executor import Recorder, spec
from tests.unit.agent.fake_api import A1, A2, FakeApi, alloc
from tests.unit.agent.test_agent_loop import assignment

ONE_GPU = {"nvidia.com/gpu": 1}


def drive(api: FakeApi, workdir: Path, until, gpus: list[str], timeout: float = 15.0) -> None:
    config = AgentConfig(node="n1", api=api.url, token="tok", cpus=4, memory=2**30, devices={"nvidia.com/gpu": 2},
                         workdir=workdir, heartbeat=0.2, poll=0.05, kill_grace=0.3, gpus=inventory(gpus))

    async def main() -> None:
        stop = asyncio.Event()
        agent = asyncio.create_task(run_agent(config, stop))
        deadline = time.monotonic() + timeout
        while not until() and time.monotonic() < deadline and not agent.done():
            await asyncio.sleep(0.02)
        stop.set()
        await agent

    asyncio.run(main())


def seen(workdir: Path, stage: str) -> str:
    return (workdir / "wf-1" / f"{stage}-1" / "seen").read_text().strip()


def test_two_one_gpu_jobs_on_a_two_gpu_node_see_different_gpus_and_a_third_gets_one_back(tmp_path):
    script = "echo $CUDA_VISIBLE_DEVICES/$NVIDIA_VISIBLE_DEVICES > seen; sleep 0.6"
    workdir = tmp_path / "work"
    with FakeApi() as api:
        api.start = [assignment(A1, script=script, devices=ONE_GPU), assignment(A2, script=script, devices=ONE_GPU)]

        def both_ended_then_third() -> bool:
            if ("exited", 1, 0) in api.events(A1) and ("exited", 1, 0) in api.events(A2) and len(api.start) == 2:
                api.start = [assignment(alloc(3), script=script, devices={"nvidia.com/gpu": 2})]
            return ("exited", 1, 0) in api.events(alloc(3))

        drive(api, workdir, both_ended_then_third, gpus=["0", "1"])
    assert sorted([seen(workdir, A1), seen(workdir, A2)]) == ["0/0", "1/1"]
    assert seen(workdir, alloc(3)) == "0,1/0,1"  # both came back when their jobs ended


def test_a_job_asking_for_more_gpus_than_are_free_cannot_start_and_says_why(tmp_path):
    with FakeApi() as api:
        api.start = [assignment(A1, script="sleep 30", devices={"nvidia.com/gpu": 2}),
                     assignment(A2, script="true", devices=ONE_GPU)]
        drive(api, tmp_path / "work", lambda: bool(api.events(A2)), gpus=["0", "1"])
    assert api.events(A2) == [("exited", 1, 126)]
    assert [r["reason"] for r in api.reports if r["allocation_id"] == A2] == [
        "cannot start: 1 nvidia.com/gpu asked for, 0 of 2 free on this node"]


def test_a_job_without_gpus_on_a_gpu_node_sees_none(tmp_path):
    workdir = tmp_path / "work"
    with FakeApi() as api:
        api.start = [assignment(A1, script="echo \"[$CUDA_VISIBLE_DEVICES]\" > seen")]
        drive(api, workdir, lambda: ("exited", 1, 0) in api.events(A1), gpus=["0", "1"])
    assert seen(workdir, A1) == "[]"


def test_declared_gpus_are_registered_as_their_count():
    def config(argv, env):
        return parse_args(["--api", "http://cp:8080", "--cpus", "2", "--memory", "1GiB", "--device", "x=1", *argv],
                          env={"ROVING_TOKEN": "t"} | env, euid=1000)

    assert config(["--gpus", "0,1"], {}).devices == {"x": 1, "nvidia.com/gpu": 2}
    assert [g.index for g in config([], {"ROVING_DECLARED_GPUS": "2,3"}).gpus] == ["2", "3"]
    assert config([], {}).gpus == [] or os.path.exists("/dev/nvidia0")


def test_declared_gpus_read_a_list_of_indices_or_a_count():
    assert parse_declared("0,1") == ["0", "1"]
    assert parse_declared("3") == ["0", "1", "2"]
    with pytest.raises(ValueError, match="distinct GPU indices"):
        parse_declared("0,0")


def test_the_binder_gives_the_lowest_free_gpus_and_takes_them_back():
    binder = DeviceBinder([Gpu("0"), Gpu("1"), Gpu("2")])
    assert binder.bind("a", 1) == ["0"]
    binder.hold("adopted", ["2"])
    assert binder.bind("b", 1) == ["1"]
    with pytest.raises(DeviceError):
        binder.bind("c", 1)
    binder.release("a")
    assert binder.bind("c", 1) == ["0"]


@pytest.fixture
def fake_gpus(tmp_path: Path) -> Path:
    """Two character devices standing in for /dev/nvidia0 and /dev/nvidia1 (they are /dev/zero and /dev/full)."""
    if os.geteuid() != 0:
        pytest.skip("device nodes and the devices cgroup need root (CI runs as root)")
    dev = tmp_path / "dev"
    dev.mkdir()
    os.mknod(dev / "nvidia0", 0o666 | 0o020000, os.makedev(1, 5))
    os.mknod(dev / "nvidia1", 0o666 | 0o020000, os.makedev(1, 7))
    return dev


def test_the_devices_cgroup_keeps_a_job_off_the_gpu_it_was_not_given(tmp_path, fake_gpus):
    hierarchy, why = cgroups.detect(f"test-{uuid.uuid4().hex[:8]}")
    if hierarchy is None or "devices" not in hierarchy.bases:
        pytest.skip(f"no cgroup v1 devices controller here: {why}")
    try:
        executor = Executor(tmp_path / "work", kill_grace=0.3, cgroups=hierarchy,
                            gpus=inventory(["0", "1"], dev=fake_gpus))
        recorder = Recorder()
        job = spec(devices=ONE_GPU, script=f"head -c1 {fake_gpus}/nvidia0 | wc -c; head -c1 {fake_gpus}/nvidia1")
        result = executor.start(job, recorder.output, recorder.exit).wait(10)
        assert recorder.text() == "1\n"
        assert "Operation not permitted" in recorder.text("stderr")
        assert result[0] != 0
    finally:
        hierarchy.reap()
        hierarchy.close()
