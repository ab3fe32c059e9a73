"""`roving mcp`: a Model Context Protocol server (stdio) over the HTTP API, as the caller's context."""
