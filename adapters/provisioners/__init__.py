"""Providers: what makes and deletes a provisioner's nodes (`local` agents on this host, an admin's `command`s).

Every call names the request (the node's name), which is the provider's idempotency key: a create asked again
after a restart answers with what the first one made, a delete asked again finds nothing left and succeeds.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Protocol

import msgspec

from domain.provisioner import Provisioner, Request
from domain.provisioner_spec import Template

AGENT_START = "import sys; from api.agent.main import agent_main; sys.exit(agent_main(sys.argv[1:]))"


class ProviderError(Exception):
    """The provider could not do what it was asked; the message is what an admin needs to fix it."""


class Order(msgspec.Struct, frozen=True, kw_only=True):
    """What a provider is asked to make or delete."""

    provisioner: str
    request: str
    node: str
    attempt: int
    template: Template
    instance: str = ""
    settings: dict[str, Any] = {}


class Provider(Protocol):
    blocking: bool  # calls may take long (run them off the runner's thread)

    def create(self, order: Order) -> str: ...

    def delete(self, order: Order) -> None: ...

    def alive(self, order: Order) -> bool | None: ...  # None: this provider cannot tell

    def adopt(self, order: Order) -> None: ...


class AgentLaunch(msgspec.Struct, frozen=True, kw_only=True):
    """How a made node's agent reaches this control plane (its token stays in a file, never in a message)."""

    api: str
    token_file: Path
    work_root: Path
    log_dir: Path


def order_for(p: Provisioner, r: Request, attempt: int | None = None) -> Order:
    return Order(provisioner=p.name, request=r.id, node=r.id, attempt=attempt or max(r.attempts, 1),
                 template=p.spec.template, instance=r.instance, settings=dict(p.spec.settings))


def agent_args(order: Order, launch: AgentLaunch) -> list[str]:
    """`roving agent` arguments for the order's node (without the program and the token file)."""
    t = order.template
    args = ["--node", order.node, "--api", launch.api, "--definition", order.provisioner, "--cpus", str(t.cpu),
            "--memory", str(t.memory)]
    args += [f"--device={name}={count}" for name, count in sorted(t.devices.items())]
    args += [f"--annotation={key}={value}" for key, value in sorted(t.annotations.items())]
    if t.segment:
        args += ["--segment", t.segment]
    return args


def agent_command() -> list[str]:
    """How this installation starts `roving agent` (its own `roving` script, else its Python)."""
    script = Path(sys.executable).with_name("roving")
    return [str(script), "agent"] if script.exists() else [sys.executable, "-c", AGENT_START]


def provider_for(provider: str, settings: dict[str, Any], launch: AgentLaunch, preexec: Any = None) -> Provider:
    if provider == "local":
        from adapters.provisioners.local import LocalProvider

        return LocalProvider(launch, settings, preexec)
    if provider == "command":
        from adapters.provisioners.command import CommandProvider

        return CommandProvider(launch, settings)
    raise ProviderError(f"unknown provider {provider!r}")
