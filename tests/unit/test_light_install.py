"""`pip install roving` (no extras) is the CLI: it starts and answers --help with every server package missing.

A fresh venv takes about 30 s to build here, so the CLI runs in a subprocess whose imports of the `server`
extra's packages (and what they pull in beyond the base install) fail as they would when not installed.
"""

import re
import subprocess
import sys
import tomllib
from importlib import metadata
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
BLOCKER = """
import importlib.abc, sys
BLOCKED = set({blocked!r})
class NotInstalled(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
sys.meta_path.insert(0, NotInstalled())
from api.cli.main import main
sys.exit(main({argv!r}))
"""


def name_of(requirement: str) -> str:
    return re.split(r"[<>=!~\[; ]", requirement, maxsplit=1)[0].lower().replace("_", "-")


def closure(names: set[str]) -> set[str]:
    """The distributions `names` need, themselves included (extras' requirements left out)."""
    found, todo = set(), list(names)
    while todo:
        name = todo.pop()
        if name in found:
            continue
        found.add(name)
        try:
            requires = metadata.requires(name) or []
        except metadata.PackageNotFoundError:
            continue
        todo += [name_of(r) for r in requires if "extra ==" not in r]
    return found


def server_only_modules() -> set[str]:
    base = closure({name_of(r) for r in PROJECT["dependencies"]})
    server = closure({name_of(r) for r in PROJECT["optional-dependencies"]["server"]}) - base
    return {module for module, dists in metadata.packages_distributions().items()
            if not module.startswith("_") and {d.lower().replace("_", "-") for d in dists} <= server}


def run_without_server(argv: list[str]) -> subprocess.CompletedProcess:
    script = BLOCKER.format(blocked=sorted(server_only_modules()), argv=argv)
    return subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=60)


def test_the_blocked_set_holds_the_server_packages():
    assert {"eventsourcing", "nats", "duckdb", "starlette", "uvicorn", "structlog"} <= server_only_modules()
    assert not {"httpx", "yaml", "msgspec"} & server_only_modules()


@pytest.mark.parametrize("argv", [["--help"], ["workflow", "list", "--help"], ["secret", "create", "--help"]])
def test_the_cli_answers_help_without_the_server_packages(argv):
    done = run_without_server(argv)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage: roving")


def test_roving_up_without_the_server_packages_names_the_extra_to_install():
    done = run_without_server(["up"])
    assert done.returncode == 1
    assert "pip install 'roving[server]'" in done.stderr and "Traceback" not in done.stderr


def test_roving_mcp_without_the_sdk_names_the_mcp_extra():
    script = BLOCKER.format(blocked=["mcp"], argv=["mcp"])
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=60,
                          env={**__import__("os").environ, "ROVING_API": "http://127.0.0.1:9", "ROVING_TOKEN": "x"})
    assert done.returncode == 1
    assert "pip install 'roving[mcp]'" in done.stderr and "Traceback" not in done.stderr


def imported_by(module: str) -> set[str]:
    """Every module `module`'s source imports, at its top and inside its functions (where commands import lazily)."""
    import ast

    source = ROOT / (module.replace(".", "/") + ".py")
    names = set()
    for node in ast.walk(ast.parse(source.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module)
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
    return names


def cli_command_modules() -> list[str]:
    from api.cli.main import GROUPS

    return sorted(group.__name__ for group in GROUPS)


IMPORTER = """
import importlib, sys
failed = []
for name in {names!r}:
    try:
        importlib.import_module(name)
    except ImportError as error:
        failed.append(f"{{name}}: {{error}}")
print("\\n".join(failed))
"""


@pytest.mark.parametrize("module", cli_command_modules())
def test_every_import_of_a_cli_command_loads_without_the_server_packages(module):
    """A command imports lazily (to start fast), so --help never reaches the import a command's run makes."""
    names = sorted(imported_by(module) | {module})
    script = BLOCKER.split("from api.cli.main")[0].format(blocked=sorted(server_only_modules())) + \
        IMPORTER.format(names=names)
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == ""
