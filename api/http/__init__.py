"""The HTTP app: Starlette routes, the web UI, authentication, the edge's limits and how it is served."""
