"""The HTTP routes, one module per resource; `all_routes()` is the table the app serves."""

from __future__ import annotations

from starlette.routing import BaseRoute


def all_routes() -> list[BaseRoute]:
    """Every route in matching order (specific paths before `{id}` patterns within a module)."""
    from api.http.routes import (agent, alerts, audit, config, endpoints, federation, health, metrics, nodes, openapi,
                            profiles, projects, proxy, proxy_ws, queue, secrets, sessions, tenancy, workflows)

    modules = (health, metrics, openapi, workflows, queue, nodes, alerts, tenancy, sessions, config, agent, audit, endpoints,
               secrets, profiles, projects, federation, proxy, proxy_ws)
    return [route for module in modules for route in module.routes]
