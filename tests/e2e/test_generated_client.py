"""A client generated from the running stack's /v4/openapi.json drives the work loop: datamodel-codegen writes
pydantic models from the document's schemas, and every request body and answer here goes through them, at the
paths the document names by operationId: submit, list, describe, follow a stage's log, stop, and a refusal.

(openapi-python-client pins httpx below the version the project tests with, so the generator here is
datamodel-codegen; it refused this document while schema names carried module paths.)"""

from __future__ import annotations

import importlib.util
import struct
import subprocess
import sys
import uuid
from pathlib import Path
from types import ModuleType

import httpx
import pytest

pytest.importorskip("datamodel_code_generator", reason="the test extra's datamodel-code-generator is not installed")

TALKER = """
version: v4
jobs:
  talker:
    image: {uri: docker://alpine}
    command: [sh, -c, "echo generated-client-line; sleep 60"]
    resource: {cpu: {cores: 1}, memory: {size: 64MiB}}
"""


@pytest.fixture(scope="module")
def document(stack) -> dict:
    return httpx.get(stack.url + "/v4/openapi.json", timeout=30).json()


@pytest.fixture
def client(stack):
    with httpx.Client(base_url=stack.url, headers=stack.auth(stack.token("admin")), timeout=30) as client:
        yield client


@pytest.fixture(scope="module")
def models(stack, tmp_path_factory) -> ModuleType:
    folder = tmp_path_factory.mktemp("client")
    (folder / "openapi.json").write_bytes(httpx.get(stack.url + "/v4/openapi.json", timeout=30).content)
    done = subprocess.run([sys.executable, "-m", "datamodel_code_generator", "--input", str(folder / "openapi.json"),
                           "--input-file-type", "openapi", "--openapi-scopes", "schemas", "--output-model-type",
                           "pydantic_v2.BaseModel", "--output", str(folder / "roving_models.py")],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return load(folder / "roving_models.py")


def load(path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # pydantic's generic models look their module up there
    spec.loader.exec_module(module)
    return module


def at(document: dict, operation_id: str, **params: str) -> tuple[str, str]:
    """The method and path of the document's operation `operation_id`, its path parameters filled in."""
    for path, methods in document["paths"].items():
        for method, op in methods.items():
            if op["operationId"] == operation_id:
                return method.upper(), path.format(**params)
    raise AssertionError(f"no operation {operation_id}")


def answer_model(document: dict, models: ModuleType, operation_id: str) -> type:
    """The generated class of the operation's success answer, by the schema the document names for it (so a
    renamed or paged list answer still reads)."""
    for methods in document["paths"].values():
        for op in methods.values():
            if op["operationId"] == operation_id:
                success = next(r for status, r in op["responses"].items() if status.startswith("2"))
                ref = success["content"]["application/json"]["schema"]["$ref"]
                return getattr(models, ref.rsplit("/", 1)[1])
    raise AssertionError(f"no operation {operation_id}")


def followed_stdout(response: httpx.Response, wanted: bytes) -> bytes:
    """Read the follow stream's frames (stream byte, 3 zero bytes, big-endian length) until `wanted` shows."""
    buffer, out = b"", b""
    for chunk in response.iter_bytes():
        buffer += chunk
        while len(buffer) >= 8 and len(buffer) >= 8 + struct.unpack(">I", buffer[4:8])[0]:
            size = struct.unpack(">I", buffer[4:8])[0]
            if buffer[0] == 1:
                out += buffer[8:8 + size]
            buffer = buffer[8 + size:]
        if wanted in out:
            return out
    return out


def test_a_generated_client_submits_lists_describes_follows_a_log_and_stops(stack, client, document, models):
    method, path = at(document, "submitWorkflow")
    body = models.Submit(name="generated", definition=TALKER).model_dump(mode="json", exclude_none=True)
    created = answer_model(document, models, "submitWorkflow").model_validate(
        client.request(method, path, json=body).json())

    listed = answer_model(document, models, "listWorkflows").model_validate(
        client.request(*at(document, "listWorkflows")).json())
    assert created.id in [w.id for w in listed.workflows]
    assert all(isinstance(w.status, models.WorkflowStatus) for w in listed.workflows)

    def described():
        answer = client.request(*at(document, "getWorkflow", id=created.id)).json()
        return answer_model(document, models, "getWorkflow").model_validate(answer)

    running = {models.StageStatus.STARTED, models.StageStatus.RUNNING}
    stack.wait(lambda: described().stages[0].status in running, 60, "the talker to run")
    assert described().submitted_at.tzinfo is not None  # format: date-time, parsed to a datetime

    method, path = at(document, "getStageLog", id=created.id, stage="talker")
    with client.stream(method, path, params={"follow": "true"}) as response:
        assert response.status_code == 200
        assert b"generated-client-line" in followed_stdout(response, b"generated-client-line")

    stopped = answer_model(document, models, "stopWorkflowPost").model_validate(
        client.request(*at(document, "stopWorkflowPost", id=created.id)).json())
    assert stopped.id == created.id
    stack.wait(lambda: described().status == models.WorkflowStatus.CANCELED, 60, "the workflow to be canceled")


def test_a_generated_client_reads_every_refusal_as_the_one_error_model(client, document, models):
    missing = client.request(*at(document, "getWorkflow", id=str(uuid.uuid4())))
    assert missing.status_code == 404
    error = models.Error.model_validate(missing.json())
    assert error.error and error.errors[0].message
    method, path = at(document, "submitWorkflow")
    refused = client.request(method, path, json={"name": "x", "definition": "version: v4\njobs: {}"})
    assert refused.status_code == 400 and models.Error.model_validate(refused.json()).errors
