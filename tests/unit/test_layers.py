"""The layers keep to their direction: each package here imports nothing from the packages it must not know."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# (package, the module prefixes none of its modules may import)
RULES = [
    # The domain is pure: no I/O libraries, and nothing from the layers built on it.
    ("domain", ("nats", "duckdb", "starlette", "uvicorn", "httpx", "aiohttp", "adapters", "api", "projections")),
    ("projections", ("adapters", "api")),
    ("adapters", ("api",)),
    # Inside api/: the node agent, the CLI and `roving federate` run where the control plane may not be installed; they
    # know only the shared api.logs and api.usage. The HTTP app is handed its services: it never builds the stack.
    ("api/agent", ("api.http", "api.composition", "api.scheduler", "api.up", "api.cli", "api.federate")),
    ("api/cli", ("api.http", "api.composition", "api.scheduler", "api.up", "api.agent", "api.federate")),
    ("api/federate", ("api.http", "api.composition", "api.scheduler", "api.up", "api.agent", "api.cli")),
    ("api/http", ("api.composition.stack", "api.up", "api.scheduler", "api.agent", "api.cli", "api.federate")),
    ("api/scheduler", ("api.http", "api.up", "api.agent", "api.cli", "api.federate")),
]


def imported_modules(source: Path) -> set[str]:
    """Every module a file imports, wherever the import statement is (top level, function, TYPE_CHECKING)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(source.read_text(), str(source))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module)
    return found


def forbidden_in(package: str, prefixes: tuple[str, ...]) -> list[str]:
    return sorted(
        f"{source.relative_to(ROOT)} imports {module}"
        for source in (ROOT / package).rglob("*.py")
        for module in imported_modules(source)
        if any(module == prefix or module.startswith(prefix + ".") for prefix in prefixes)
    )


@pytest.mark.parametrize(("package", "prefixes"), RULES, ids=[package for package, _ in RULES])
def test_a_package_imports_nothing_from_the_layers_it_must_not_know(package: str, prefixes: tuple[str, ...]):
    assert forbidden_in(package, prefixes) == []
