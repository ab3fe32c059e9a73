"""Schemathesis against `/v4/openapi.json`, in process on the harness app: no 5xx, and answers the document allows
(status, content type, and the body against the response schema, api.http.answers).

Every operation gets a few valid (positive) and invalid (negative) requests as the cluster admin. A 503 is
allowed only where the harness leaves a part of the control plane out on purpose (audit log, federation, the
endpoint proxy with nothing bound); any other 5xx, or a status or body the document does not list, fails.
"""

from __future__ import annotations

import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode
from schemathesis.checks import content_type_conformance, response_schema_conformance, status_code_conformance
from schemathesis.core.failures import FailureGroup

from tests.unit.api.harness import JOB, Api

EXAMPLES = 8  # per operation and mode: ~70 operations x 2 modes runs in about 10 s
NOT_RUNNING = ("/v4/audit", "/v4/federation/", "/endpoints/")  # absent from the harness: 503 by design
CHECKS = [status_code_conformance, content_type_conformance, response_schema_conformance]  # typed answers hold


def test_no_server_errors_and_documented_answers() -> None:
    api = Api()
    schema = schemathesis.openapi.from_asgi("/v4/openapi.json", api.app)
    headers = {"Authorization": f"Bearer {api.admin}"}
    failures: list[str] = []
    operations = examples = 0

    for result in schema.get_all_operations():
        operation = result.ok()
        operations += 1
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):

            # probe() is called and done within this iteration, so the loop variables it reads (B023) are current
            @settings(max_examples=EXAMPLES, deadline=None, database=None, phases=[Phase.generate],
                      suppress_health_check=list(HealthCheck))
            @given(case=operation.as_strategy(generation_mode=mode))
            def probe(case: schemathesis.Case) -> None:
                nonlocal examples
                response = case.call(headers=headers)
                examples += 1
                status, path = response.status_code, case.formatted_path
                if status >= 500 and not (status == 503 and path.startswith(NOT_RUNNING)):
                    failures.append(f"{operation.label} -> {status}: {response.text[:200]}\n  {case.as_curl_command()}")  # noqa: B023
                    return
                try:
                    case.validate_response(response, checks=CHECKS)
                except FailureGroup as error:
                    failures.append(f"{operation.label} -> {status}: {str(error)[:300]}")  # noqa: B023

            try:
                probe()
            except Unsatisfiable:  # nothing to make invalid (public, no parameters, no body): positive only
                assert mode is GenerationMode.NEGATIVE, operation.label

    assert operations > 50, operations
    assert examples > operations, examples
    assert not failures, "\n".join(failures[:20])


def test_a_number_too_wide_to_store_is_a_400_naming_it() -> None:
    """Schemathesis found these as 500s: the event store's encoding keeps 64-bit integers only."""
    api = Api()
    node = {"name": "n1", "cpu": 2**70, "memory": 1, "address": ""}
    answer = api.request("POST", "/v4/agent/register", api.admin, json=node)
    assert answer.status_code == 400 and answer.json()["errors"][0]["path"] == "cpu", answer.text
    deep = {"x": [1, {"y": -(2**64)}]}
    answer = api.request("PUT", "/v4/admin/centralconfig", api.admin, json=deep)
    assert answer.status_code == 400 and answer.json()["errors"][0]["path"] == "x[1].y", answer.text
    wide = JOB.replace("cores: 1", "cores: 99999999999999999999999")
    answer = api.request("POST", "/v4/workflows", api.admin, content=wide, headers={"content-type": "application/yaml"})
    assert answer.status_code == 400, answer.text
    assert answer.json()["errors"][0]["path"] == "jobs.hello.resource.cpu.cores", answer.text  # as every Fuzzfile problem
    answer = api.request("POST", "/v4/workflows?priority=" + "9" * 30, api.admin, content=JOB,
                         headers={"content-type": "application/yaml"})
    assert answer.status_code == 400 and answer.json()["errors"][0]["path"] == "priority", answer.text
