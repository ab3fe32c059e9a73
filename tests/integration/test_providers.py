"""The providers against real processes: the command provider's protocol (JSON both ways, stderr on failure, a
program killed whole at its timeout) and the local provider finding, adopting and deleting agents by command line."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from adapters.provisioners import AgentLaunch, Order, ProviderError
from adapters.provisioners.command import CommandProvider
from adapters.provisioners.local import LocalProvider
from domain.provisioner_spec import Template

TOKEN = "rv1.the-agent-token-itself"
TEMPLATE = Template(cpu=2, memory=2**30, annotations={"pool": "x"})


def order(node: str = "x-1", instance: str = "") -> Order:
    return Order(provisioner="x", request=node, node=node, attempt=1, template=TEMPLATE, instance=instance)


def launch(tmp_path: Path) -> AgentLaunch:
    token = tmp_path / "agent.token"
    token.write_text(TOKEN)
    return AgentLaunch(api="http://127.0.0.1:9", token_file=token, work_root=tmp_path / "work", log_dir=tmp_path)


def program(tmp_path: Path, body: str) -> str:
    path = tmp_path / "prog.sh"
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)
    return str(path)


def test_create_is_told_the_request_template_and_agent_and_answers_its_instance(tmp_path):
    seen = tmp_path / "seen.json"
    prog = program(tmp_path, f'cat > {seen}\necho "some chatter"\necho \'{{"instance": "i-42"}}\'\n')
    provider = CommandProvider(launch(tmp_path), {"create": prog, "delete": prog, "timeoutSeconds": 10})
    assert provider.create(order()) == "i-42"
    told = json.loads(seen.read_text())
    assert (told["action"], told["request"], told["node"], told["attempt"]) == ("create", "x-1", "x-1", 1)
    assert told["template"]["annotations"] == {"pool": "x"}
    assert told["agent"]["tokenFile"].endswith("agent.token") and TOKEN not in seen.read_text()  # a path, never it
    assert told["agent"]["args"][:2] == ["--node", "x-1"] and "--annotation=pool=x" in told["agent"]["args"]


def test_a_failing_or_silent_or_slow_program_is_a_provider_error_saying_why(tmp_path):
    cases = [('echo "quota exceeded" >&2; exit 3', "exited 3: quota exceeded"),
             ('echo "not json"', "no JSON object"),
             ("echo '{}'", "it must print"),
             ("sleep 30 & sleep 30", "ran past 1s and was killed")]
    for body, message in cases:
        prog = program(tmp_path, body + "\n")
        provider = CommandProvider(launch(tmp_path), {"create": prog, "delete": prog, "timeoutSeconds": 1})
        began = time.monotonic()
        with pytest.raises(ProviderError, match=message):
            provider.create(order())
        assert time.monotonic() - began < 10
    assert subprocess.run(["pgrep", "-f", "sleep 30 & sleep 30"], capture_output=True).returncode == 1


def test_a_missing_program_is_named(tmp_path):
    provider = CommandProvider(launch(tmp_path), {"create": "/nonexistent/create", "delete": "/x"})
    with pytest.raises(ProviderError, match="/nonexistent/create cannot run"):
        provider.create(order())


def fake_agent(tmp_path: Path, node: str) -> subprocess.Popen:
    """A process whose command line is an agent's for `node` with this launch's token (what the provider looks for)."""
    token = str(tmp_path / "agent.token")
    return subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)", "--node", node, "--token-file",
                             token])


def test_the_local_provider_answers_with_a_running_agent_and_deletes_it_with_its_work_dir(tmp_path):
    provider = LocalProvider(launch(tmp_path), {})
    agent = fake_agent(tmp_path, "x-1")
    try:
        time.sleep(0.2)
        assert provider.alive(order()) is True
        assert provider.create(order()) == f"local:x-1:{agent.pid}"  # asked again: the one running, not a second
        (tmp_path / "work" / "x-1").mkdir(parents=True)
        provider.delete(order())
        assert agent.wait(15) is not None
        assert not (tmp_path / "work" / "x-1").exists() and provider.alive(order()) is False
        provider.delete(order())  # nothing left: still success
    finally:
        agent.kill()
        agent.wait()
