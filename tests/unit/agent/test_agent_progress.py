"""The agent relays a transfer's latest progress line at most every few seconds, and nothing of other jobs."""

from adapters.runspec import RunSpec, local_spec
from api.agent.progress import ProgressRelay
from tests.unit.agent.fake_api import A1


def spec(kind: str) -> RunSpec:
    return local_spec(allocation_id=A1, epoch=2, workflow_id="w", stage=f"{kind}:data", kind=kind)


def test_only_the_latest_line_goes_and_then_not_again_before_the_interval():
    relay = ProgressRelay(every=5)
    relay.seen(spec("ingress"), "stdout", b"ingress s3://b/k -> file://k: 1.0 MiB\ningress s3://b/k -> file://k: 2.0 MiB\n")
    assert relay.due(now=100) == [(A1, 2, "ingress s3://b/k -> file://k: 2.0 MiB")]
    relay.seen(spec("ingress"), "stdout", b"ingress s3://b/k -> file://k: 3.0 MiB\n")
    assert relay.due(now=102) == []
    assert relay.due(now=105) == [(A1, 2, "ingress s3://b/k -> file://k: 3.0 MiB")]
    assert relay.due(now=200) == []  # nothing new was printed


def test_a_jobs_output_is_never_taken_for_progress():
    relay = ProgressRelay(every=5)
    relay.seen(spec("job"), "stdout", b"ingress of my own making\n")
    relay.seen(spec("egress"), "stderr", b"egress of https://x failed: HTTP 500\n")
    assert relay.due(now=100) == []


def test_every_step_of_an_image_build_goes_at_once_and_the_post_scripts_output_does_not():
    relay = ProgressRelay(every=5)
    relay.seen(spec("build"), "stdout", b"build pulling base docker://busybox\nmy post says hi\nbuild running post\n")
    relay.seen(spec("build"), "stdout", b"build storing 1.2 MB\n")
    assert relay.due(now=100) == [(A1, 2, "build pulling base docker://busybox"), (A1, 2, "build running post"),
                                  (A1, 2, "build storing 1.2 MB")]
    assert relay.due(now=101) == []
