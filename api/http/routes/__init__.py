"""The HTTP routes, one module per resource; `all_routes()` is the table the app serves."""

from __future__ import annotations

from starlette.routing import BaseRoute


def all_routes() -> list[BaseRoute]:
    """Every route in matching order (specific paths before `{id}` patterns within a module)."""
    from api.http.routes import (
        accounts,
        agent,
        alerts,
        audit,
        catalog,
        catalog_refresh,
        config,
        endpoints,
        federation,
        health,
        metrics,
        nodes,
        objects,
        openapi,
        profiles,
        projects,
        provisioners,
        proxy,
        proxy_ws,
        queue,
        resubmit,
        secrets,
        sessions,
        tenancy,
        volume_provisioners,
        workflow_tokens,
        workflows,
    )

    modules = (health, metrics, openapi, workflows, queue, nodes, alerts, accounts, tenancy, sessions, config, agent, audit,
               endpoints, secrets, profiles, projects, provisioners, catalog, federation, proxy, proxy_ws, objects,
               workflow_tokens, volume_provisioners, resubmit, catalog_refresh)
    return [route for module in modules for route in module.routes]
