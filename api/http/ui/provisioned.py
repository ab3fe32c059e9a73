"""The Nodes page's provisioning parts: which provisioner made each node, and each provisioner's template with the
nodes it made or is making (a node being made is not a node yet, so only here can it be seen)."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request

from api.http.routes import common as c
from api.http.ui import render


def made_by(request: Request) -> dict[str, Any]:
    """Node name -> (provisioner, its request) for every node a provisioner made or is making."""
    return {r.id: (p, r) for p in c.services(request).views.provisioners.all(True) for r in p.live()}


def cell(made: dict[str, Any], node: str) -> render.Html:
    found = made.get(node)
    if found is None:
        return render.Html(render.macro("hint")("-"))
    p, r = found
    return render.Html(render.part("nodes_parts", "provisioner")(p.name, r.state.value, template_text(p)))


def template_text(p: Any) -> str:
    t = p.spec.template
    extras = [f"{k}={v}" for k, v in sorted({**t.devices, **t.annotations}.items())]
    return " ".join([f"{t.cpu} cpu, {t.memory / 2**30:.1f} GiB", *extras, *([f"segment {t.segment}"] if t.segment else [])])


def section(request: Request) -> render.Html:
    """Provisioners, their templates and their nodes by state; none defined, nothing shown."""
    found = c.services(request).views.provisioners.all(True)
    rows = [[p.name + (" (deleted)" if p.deleted else ""), p.spec.provider, template_text(p),
             f"{len(p.requests)} of {p.spec.max_nodes}", f"{p.spec.idle_seconds:g}s",
             render.joined(render.joined((_name(r), r.state.value), " ") for r in p.live())
             if p.live() else render.Html(render.macro("hint")("none"))]
            for p in found if not p.deleted or p.requests]
    if not rows:
        return render.Html("")
    table = render.table(["Provisioner", "Provider", "Template", "Nodes (of max)", "Idle after", "Its nodes"], rows,
                         id="provisioners")
    return render.Html(render.part("nodes_parts", "provisioners")(table))


def _name(r: Any) -> str:
    """A node that registered links to its page; one still being made is only a name."""
    return render.node_link(r.id) if r.state.value in ("UP", "DRAINING") else r.id
