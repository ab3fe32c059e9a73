"""Paths a Fuzzfile gives in the image: a `files` entry at an absolute path is there in the job (as Fuzzball puts
it), and an absolute `cwd` (a volume's mount path, say) is entered inside the image without being made on the node."""

from __future__ import annotations

from pathlib import Path

from tests.integration.test_executor import run, spec
from tests.integration.test_isolation_image import image, oci_executor  # noqa: F401 - fixtures


def test_a_file_at_an_absolute_path_is_at_that_path_in_the_image(image, oci_executor):  # noqa: F811
    _, reference = image
    files = {"/tmp/setup.py": "print('tmp')\n", "/opt/app/conf.ini": "[app]\n", "rel.txt": "relative\n"}
    recorder, result = run(oci_executor, spec(image=reference, files=files,
                                              script="cat /tmp/setup.py /opt/app/conf.ini rel.txt"))
    assert result == (0, "exited with code 0"), recorder.text("stderr")
    assert recorder.text().splitlines() == ["print('tmp')", "[app]", "relative"]


def test_an_absolute_cwd_is_the_volume_mounted_there_and_nothing_is_made_on_the_node(image, oci_executor):  # noqa: F811
    _, reference = image
    where = "/roving-test-cwd-data"
    recorder, result = run(oci_executor, spec(image=reference, cwd=where, mounts={where: "data"},
                                              script="pwd; echo here > out.txt"))
    assert result == (0, "exited with code 0"), recorder.text("stderr")
    assert recorder.text().strip() == where
    assert (oci_executor.volumes.path("wf-1", "data") / "out.txt").read_text() == "here\n"
    assert not Path(where).exists()
