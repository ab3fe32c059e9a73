"""The layers keep to their direction: each package imports nothing from the packages it must not know, the domain
reads no clock and draws no random value, and only the entry points import the composition root.

Imports and names are read with `ast` (every import statement, wherever it is: top level, function, TYPE_CHECKING),
so a comment or a string that mentions a module is never mistaken for an import. Each finding names file and line.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("domain", "projections", "adapters", "api", "ops")

# Libraries that reach outside the process: the network, other processes, files, the event loop, logs and metrics.
IO_LIBRARIES = (
    "nats", "duckdb", "starlette", "uvicorn", "httpx", "aiohttp", "requests", "urllib.request", "http.client",
    "http.server", "socket", "socketserver", "ssl", "select", "selectors", "asyncio", "subprocess", "multiprocessing",
    "signal", "os", "shutil", "tempfile", "glob", "io", "sqlite3", "mmap", "fcntl", "boto3", "botocore",
    "structlog", "logging", "prometheus_client",
)

# (package, the module prefixes none of its modules may import)
RULES = [
    # The domain is pure: no I/O libraries, and nothing from the layers built on it.
    ("domain", (*IO_LIBRARIES, "adapters", "api", "projections")),
    # Projections are fed events by a runner (the follower in adapters/) and do no I/O of their own.
    ("projections", (*IO_LIBRARIES, "adapters", "api")),
    ("adapters", ("api",)),
    # Inside api/: the node agent, the CLI and `roving federate` run where the control plane may not be installed; they
    # know only the shared api.logs and api.usage. The HTTP app is handed its services: it never builds the stack.
    ("api/agent", ("api.http", "api.composition", "api.scheduler", "api.up", "api.cli", "api.federate")),
    ("api/cli", ("api.http", "api.composition", "api.scheduler", "api.up", "api.agent", "api.federate")),
    ("api/federate", ("api.http", "api.composition", "api.scheduler", "api.up", "api.agent", "api.cli")),
    ("api/http", ("api.composition.stack", "api.up", "api.scheduler", "api.agent", "api.cli", "api.federate")),
    ("api/scheduler", ("api.http", "api.up", "api.agent", "api.cli", "api.federate")),
]

# What reads the clock or draws a random value; the domain is given `at` and ids by its caller (replays stay exact).
CLOCK_AND_RANDOM = (
    "datetime.datetime.now", "datetime.datetime.utcnow", "datetime.datetime.today", "datetime.date.today",
    "time.time", "time.time_ns", "time.monotonic", "time.monotonic_ns", "time.perf_counter", "time.perf_counter_ns",
    "time.process_time", "time.localtime", "time.gmtime", "time.ctime", "time.asctime", "time.strftime",
    "uuid.uuid1", "uuid.uuid4", "random", "secrets", "os.urandom", "os.getrandom",
)

# The processes' mains: only these build the composition root (api/composition/ itself aside).
ENTRY_POINTS = {
    "api/up/main.py": "`roving up`: the control plane in one process",
    "api/up/workers.py": "`worker_main`, each API worker process that `roving up` starts (ROVING_API_WORKERS > 1)",
    "api/scheduler/main.py": "`roving scheduler`: a standby-capable scheduler process",
    "ops/bench/api.py": "a benchmark script that builds a real stack",
    "ops/bench/proxy.py": "a benchmark script that builds the HTTP services",
    "ops/bench/retention.py": "a benchmark script that builds a real stack",
}
# Modules that are no entry point yet import from api.composition, each with the reason it is left so.
COMPOSITION_ALLOWED = {
    # `Services` is the typed set of parts the HTTP app is handed (the contract between the root and the app).
    # Moving it beside the app renames it in every route and test that builds one, while the typing work of issue 29
    # changes create_app's signature: it moves after that lands.
    ("api/http/app.py", "api.composition.services"): "Services, the parts create_app is handed",
    ("api/http/app.py", "api.composition.settings"): "Settings, the type create_app is configured by",
    ("api/http/routes/common.py", "api.composition.services"): "Services, the type of `services(request)`",
    ("api/http/routes/metrics.py", "api.composition.services"): "Services, what a scrape refreshes",
    # The alerts route decides under the same lock as the refused-alerts loop (DECIDING) and waits for the views
    # the same way (`settled`); the two want a home outside the root, shared by the loop and the route.
    ("api/http/routes/alerts.py", "api.composition.refused_alerts"): "DECIDING and settled, shared with the loop",
}


def sources(package: str) -> Iterator[Path]:
    yield from sorted((ROOT / package).rglob("*.py"))


def where(source: Path, node: ast.AST) -> str:
    return f"{source.relative_to(ROOT)}:{getattr(node, 'lineno', 0)}"


def parsed(source: Path) -> ast.Module:
    return ast.parse(source.read_text(), str(source))


def imports(tree: ast.Module) -> Iterator[tuple[str, ast.AST]]:
    """(module, the statement) for every absolute import; `from a import b` names both `a` and `a.b`, so that
    `from api import composition` is the import of api.composition it is."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from ((alias.name, node) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            yield node.module, node
            yield from (((f"{node.module}.{alias.name}"), node) for alias in node.names if alias.name != "*")


def under(module: str, prefixes: tuple[str, ...] | set[str]) -> str | None:
    return next((p for p in prefixes if module == p or module.startswith(p + ".")), None)


def forbidden_in(package: str, prefixes: tuple[str, ...]) -> list[str]:
    found = set()
    for source in sources(package):
        for module, node in imports(parsed(source)):
            if (prefix := under(module, prefixes)) is not None:
                found.add(f"{where(source, node)} imports {prefix}")
    return sorted(found)


@pytest.mark.parametrize(("package", "prefixes"), RULES, ids=[package for package, _ in RULES])
def test_a_package_imports_nothing_from_the_layers_it_must_not_know(package: str, prefixes: tuple[str, ...]):
    assert forbidden_in(package, prefixes) == []


@pytest.mark.parametrize("package", PACKAGES)
def test_no_module_imports_relatively(package: str):
    """A relative import hides which layer it reaches into from every rule above (and from a reader)."""
    found = [f"{where(source, node)} imports from {'.' * node.level}{node.module or ''}"
             for source in sources(package) for node in ast.walk(parsed(source))
             if isinstance(node, ast.ImportFrom) and node.level]
    assert found == []


def dotted_names(tree: ast.Module) -> Iterator[tuple[str, ast.AST]]:
    """Every name and attribute chain in a module, spelled as the module it came from: `datetime.now` after
    `from datetime import datetime` is `datetime.datetime.now`, `dt.datetime.now` after `import datetime as dt` too."""
    bound: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            bound.update((a.asname or a.name.partition(".")[0], a.name if a.asname else a.name.partition(".")[0])
                         for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            bound.update((a.asname or a.name, f"{node.module}.{a.name}") for a in node.names)
    parts = {id(node.value) for node in ast.walk(tree) if isinstance(node, ast.Attribute)}  # `a` of `a.b`: said once
    for node in ast.walk(tree):
        if id(node) in parts:
            continue
        chain, inner = [], node
        while isinstance(inner, ast.Attribute):
            chain.append(inner.attr)
            inner = inner.value
        if isinstance(inner, ast.Name) and inner.id in bound:
            yield ".".join([bound[inner.id], *reversed(chain)]), node


def test_the_domain_reads_no_clock_and_draws_no_random_value():
    """Called or passed on (`default_factory=uuid4`), either would make a replay differ from what was decided."""
    found = sorted({f"{where(source, node)} uses {name}"
                    for source in sources("domain") for name, node in dotted_names(parsed(source))
                    if under(name, CLOCK_AND_RANDOM) is not None})
    assert found == []


def allowed(path: str, module: str) -> bool:
    return any(path == where and under(module, {root}) for where, root in COMPOSITION_ALLOWED)


def test_only_the_entry_points_import_the_composition_root():
    found = []
    for package in PACKAGES:
        for source in sources(package):
            path = str(source.relative_to(ROOT))
            if path.startswith("api/composition/") or path in ENTRY_POINTS:
                continue
            found += [f"{where(source, node)} imports {module}" for module, node in imports(parsed(source))
                      if under(module, {"api.composition"}) and not allowed(path, module)]
    assert found == []


def test_every_entry_point_and_allowance_names_a_file_that_still_imports_the_root():
    """A stale entry in either list would let the next module in under its name."""
    importing = {(str(s.relative_to(ROOT)), m) for p in PACKAGES for s in sources(p)
                 for m, _ in imports(parsed(s)) if under(m, {"api.composition"})}
    assert {path for path, _ in importing} >= set(ENTRY_POINTS)
    assert importing >= set(COMPOSITION_ALLOWED)
