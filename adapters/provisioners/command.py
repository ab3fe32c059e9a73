"""The `command` provider: an admin's programs make and delete nodes, the way Slurm's ResumeProgram and
SuspendProgram let any cloud plug in.

Each call runs the program (`settings.create` or `settings.delete`) with one JSON object on stdin and reads one
JSON object from stdout; exit 0 is success, anything else a failure whose stderr is reported. Create must be
idempotent by `request`: asked again (after a restart, or a retry) it answers with the instance it made before.
Create's answer is `{"instance": "<its id>"}`; delete is given that id and answers `{}` (output may be empty).
The program runs in a session of its own and is killed whole at `settings.timeoutSeconds`.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
from typing import Any

import msgspec

from adapters.provisioners import AgentLaunch, Order, ProviderError, agent_args, agent_command

MAX_OUTPUT = 64 * 1024
ERROR_TAIL = 1000


class CommandProvider:
    blocking = True  # a cloud call may take minutes: run off the runner's thread

    def __init__(self, launch: AgentLaunch, settings: dict[str, Any]) -> None:
        self.launch, self.settings = launch, settings
        self.timeout = float(settings.get("timeoutSeconds", 300))

    def create(self, order: Order) -> str:
        answer = self._run("create", self._message("create", order))
        instance = answer.get("instance")
        if not isinstance(instance, str) or not instance:
            raise ProviderError(f"create answered {json.dumps(answer)[:300]}; it must print "
                                '{"instance": "<id of what it made>"}')
        return instance

    def delete(self, order: Order) -> None:
        self._run("delete", self._message("delete", order))

    def alive(self, order: Order) -> bool | None:
        return None  # its node's lease tells: an instance that died goes OFFLINE

    def adopt(self, order: Order) -> None:
        return None  # its instances live elsewhere and outlive this process

    def _message(self, action: str, order: Order) -> dict[str, Any]:
        return {"action": action, "provisioner": order.provisioner, "request": order.request, "node": order.node,
                "attempt": order.attempt, "instance": order.instance, "template": msgspec.to_builtins(order.template),
                "agent": {"api": self.launch.api, "tokenFile": str(self.launch.token_file),
                          "command": agent_command(), "args": agent_args(order, self.launch)}}

    def _run(self, action: str, message: dict[str, Any]) -> dict[str, Any]:
        program = str(self.settings[action])
        try:
            process = subprocess.Popen([program], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                       stderr=subprocess.PIPE, start_new_session=True)
        except OSError as error:
            raise ProviderError(f"{action} program {program} cannot run: {error.strerror or error}") from error
        try:
            out, err = process.communicate(json.dumps(message).encode(), timeout=self.timeout)
        except subprocess.TimeoutExpired:
            _kill_group(process)
            raise ProviderError(f"{action} program {program} ran past {self.timeout:g}s and was killed") from None
        tail = err.decode(errors="replace").strip()[-ERROR_TAIL:]
        if process.returncode != 0:
            raise ProviderError(f"{action} program exited {process.returncode}: {tail or '(no stderr)'}")
        return _answer(action, out[:MAX_OUTPUT])


def _answer(action: str, out: bytes) -> dict[str, Any]:
    text = out.decode(errors="replace").strip()
    if not text:
        return {}
    try:
        answer = json.loads(text.splitlines()[-1])
    except json.JSONDecodeError:
        raise ProviderError(f"{action} program printed no JSON object on its last line: {text[-300:]!r}") from None
    if not isinstance(answer, dict):
        raise ProviderError(f"{action} program printed {text[-300:]!r}; expected a JSON object")
    return answer


def _kill_group(process: subprocess.Popen) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    process.communicate()
