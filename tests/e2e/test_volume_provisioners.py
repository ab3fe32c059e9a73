"""Volume provisioners on the README stack: a cluster admin plugs in a shell-script program for storage class
`lustre`; a workflow that mounts a volume of it waits, its stage held with the reason, while the program has not
answered, then runs and writes into the directory the program made; the same volume asked again is the same
request; a program that fails ends its workflow with the reason it printed, and its stderr reaches no user."""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

import pytest

from tests.e2e.stack import LocalStack

PROGRAM = r"""#!/bin/sh
# A site's volume provisioner: makes ROOT/ORG/SCOPE/UID/NAME, owned by the volume's owner, once per request.
input=$(cat)
field() { printf '%s' "$input" | sed -n "s/.*\"$1\": \"\{0,1\}\([^\",}]*\)\"\{0,1\}[,}].*/\1/p"; }
request=$(field request); name=$(field name); root=$(field root); org=$(field organization)
scope=$(field scope); uid=$(field uid); gid=$(field gid)
echo "$request $name" >> "$(dirname "$0")/calls"
while [ ! -f "$(dirname "$0")/gate" ]; do sleep 0.1; done
if [ "$name" = "broken" ]; then
    echo "token=SECRET-42 for the storage API refused" >&2
    echo '{"error": "project quota exceeded on /lustre"}'
    exit 3
fi
dir="$root/$org/$scope/$uid/$name"
mkdir -p "$dir" && chown "$uid:$gid" "$dir" && chmod 700 "$dir"
echo "{\"path\": \"$dir\"}"
"""
WRITE = """
version: v4
volumes:
  data: {reference: volume://user/lustre/%s}
jobs:
  write:
    image: {uri: docker://alpine:3.20}
    script: echo provisioned > /data/out.txt
    mounts: {/data: {volume: data}}
"""


@pytest.fixture(scope="module")
def site():
    path = Path(tempfile.mkdtemp(prefix="roving-e2e-lustre-"))
    path.chmod(0o711)  # jobs run as their owners: they pass through to their own directories
    program = path / "bin" / "make-volume"
    program.parent.mkdir()
    program.write_text(PROGRAM)
    program.chmod(0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="module")
def stack(tmp_path_factory, site):
    running = LocalStack(tmp_path_factory.mktemp("roving"), settings={"ROVING_WORK_DIR": str(site / "work")}).start()
    yield running
    running.stop()


def blocked(stack: LocalStack, workflow: str, text: str) -> bool:
    return text in json.dumps(stack.events(workflow))


def test_a_workflow_waits_for_its_volume_then_writes_into_the_directory_the_program_made(stack, site):
    made = stack.client.put("/v4/volume-provisioners/lustre", json={
        "class": "lustre", "program": str(site / "bin" / "make-volume"), "root": str(site / "lustre")})
    assert made.status_code == 201, made.text
    first, second = stack.submit(WRITE % "results", "first"), stack.submit(WRITE % "results", "second")
    stack.wait(lambda: blocked(stack, first, "volume data is being provisioned by lustre"), 30, "the held stage")
    assert stack.workflow(first)["status"] not in ("FINISHED", "FAILED", "CANCELED")
    (site / "bin" / "gate").touch()
    for workflow in (first, second):
        done = stack.wait_status(workflow, ("FINISHED", "FAILED", "CANCELED"), timeout=90)
        assert done["status"] == "FINISHED", done
    written = list((site / "lustre").glob("*/user/*/results/out.txt"))
    assert len(written) == 1 and written[0].read_text() == "provisioned\n"
    assert written[0].parent.stat().st_mode & 0o777 == 0o700
    calls = (site / "bin" / "calls").read_text().split("\n")
    assert [c for c in calls if c.endswith(" results")] == [calls[0]]  # two workflows, one request, asked once
    third = stack.submit(WRITE % "results", "third")  # ready: bound at once
    assert stack.wait_status(third, ("FINISHED", "FAILED", "CANCELED"), timeout=60)["status"] == "FINISHED"
    shown = stack.client.get("/v4/volume-provisioners/lustre").json()
    assert [(v["state"], v["path"]) for v in shown["volumes"]] == [("READY", str(written[0].parent))]


def test_a_failing_program_ends_the_workflow_with_its_reason_and_never_shows_its_stderr(stack, site):
    (site / "bin" / "gate").touch()
    broken = stack.submit(WRITE % "broken", "broken")
    done = stack.wait_status(broken, ("FINISHED", "FAILED", "CANCELED"), timeout=60)
    seen = json.dumps(done) + json.dumps(stack.events(broken))
    assert done["status"] == "CANCELED", done
    assert "could not be provisioned by lustre: its program exited 3: project quota exceeded on /lustre" in seen
    assert "SECRET-42" not in seen
    assert "SECRET-42" not in json.dumps(stack.client.get("/v4/volume-provisioners/lustre").json())
