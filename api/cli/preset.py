"""`roving preset ...`: named sets of `workflow start` options, kept as files under $XDG_CONFIG_HOME/roving/presets.

`workflow start --preset NAME` expands one on this side (what the command line says itself wins) and records the
preset's name and digest in the workflow's annotations. Admins deploy shared presets on the server; `pull` copies
them here. A pulled or imported preset never silently replaces a different local one: that is refused unless
`--as NEW` saves it under another name or `--force` replaces it (the old file is kept as NAME.yaml.bak).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

import yaml

from api.cli.client import ApiError, Client
from domain.presets import DIGEST_ANNOTATION, PRESET_ANNOTATION, Preset, PresetError, check_name, parse_preset

COLUMNS = ["name", "source", "description", "digest"]


class Refused(Exception):
    """A preset command that cannot go on: printed, exit 1 (2 for bad usage)."""

    def __init__(self, message: str, code: int = 1) -> None:
        super().__init__(message)
        self.code = code


def presets_dir() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "roving" / "presets"


def local(name: str) -> Preset | None:
    path = presets_dir() / f"{check_name(name)}.yaml"
    return read(path, name) if path.exists() else None


def read(path: Path, name: str | None = None) -> Preset:
    try:
        document = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as error:
        raise Refused(f"cannot read {path}: {error}") from None
    except yaml.YAMLError as error:
        raise Refused(f"{path} is not YAML: {str(error).splitlines()[0]}") from None
    wanted = name or (document.get("name") if isinstance(document, dict) else None) or path.stem
    try:
        return parse_preset(wanted, document)
    except PresetError as error:
        raise Refused(f"{path}: {error}") from None


def write(preset: Preset, force: bool) -> str:
    """Save it as NAME.yaml; the same content again is a no-op; other content there needs `force` (kept as .bak)."""
    folder = presets_dir()
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{preset.name}.yaml"
    replaced = path.exists()
    if replaced:
        existing = read(path, preset.name)
        if existing.digest == preset.digest and existing.description == preset.description:
            return "unchanged"
        if not force:
            raise Refused(f"a different preset {preset.name} exists here ({existing.digest[:19]}); keep both with "
                          f"--as NEW_NAME, or replace it with --force (the old one is kept as {path.name}.bak)")
        path.with_name(path.name + ".bak").write_bytes(path.read_bytes())
    text = yaml.safe_dump(preset.document(), sort_keys=False)
    with tempfile.NamedTemporaryFile("w", dir=folder, delete=False, suffix=".tmp", encoding="utf-8") as out:
        out.write(text)
    os.replace(out.name, path)
    return f"replaced (the old one is {path.name}.bak)" if replaced else "saved"


def server(client: Client) -> list[Preset]:
    answer = client.get("/v4/presets")
    return [parse_preset(p["name"], {k: v for k, v in p.items() if k in ("description", "options")})
            for p in answer.get("presets", [])]


def find(name: str, client: Client | None) -> tuple[Preset, str]:
    """A preset by name: this machine's first, then the server's; Refused naming what there is."""
    found = local(name)
    if found is not None:
        return found, "local"
    if client is not None:
        shared = next((p for p in server(client) if p.name == name), None)
        if shared is not None:
            return shared, "server"
    raise Refused(f"no preset named {name} here ({presets_dir()}) or on the server; see `roving preset list`")


def refusals(handler):
    def run(args: argparse.Namespace, client: Client) -> Any:
        try:
            return handler(args, client)
        except Refused as error:
            print(f"roving preset: {error}", file=sys.stderr)
            return error.code
        except PresetError as error:
            print(f"roving preset: {error}", file=sys.stderr)
            return 2
    return run


def row(preset: Preset, source: str) -> dict[str, Any]:
    return {"name": preset.name, "source": source, "description": preset.description, "digest": preset.digest[:19],
            "options": preset.options}


@refusals
def list_presets(args: argparse.Namespace, client: Client) -> Any:
    folder = presets_dir()
    mine = {p.stem: read(p) for p in sorted(folder.glob("*.yaml"))} if folder.is_dir() else {}
    rows = [row(p, "local") for p in mine.values()]
    try:
        for p in server(client):
            same = p.name in mine and mine[p.name].digest == p.digest
            rows = [{**r, "source": "local = server"} if same and r["name"] == p.name else r for r in rows]
            if p.name not in mine:
                rows.append(row(p, "server"))
            elif not same:
                rows.append(row(p, "server (differs)"))
    except ApiError as error:
        print(f"note: the server's presets are not listed: {error}", file=sys.stderr)
    return sorted(rows, key=lambda r: (r["name"], r["source"]))


@refusals
def show(args: argparse.Namespace, client: Client) -> Any:
    preset, source = find(args.name, client)
    return {"name": preset.name, "source": source, "digest": preset.digest, **preset.document()}


@refusals
def pull(args: argparse.Namespace, client: Client) -> Any:
    shared = {p.name: p for p in server(client)}
    names = args.names or sorted(shared)
    if args.as_ and len(names) != 1:
        raise Refused("--as names one pulled preset: give exactly one NAME", code=2)
    missing = [n for n in names if n not in shared]
    if missing:
        raise Refused(f"the server has no preset {', '.join(missing)} (it has: {', '.join(sorted(shared)) or 'none'})")
    done = []
    for name in names:
        preset = shared[name]
        if args.as_:
            preset = parse_preset(check_name(args.as_), preset.document())
        done.append({"name": preset.name, "from": name, "status": write(preset, args.force)})
    return done


@refusals
def export(args: argparse.Namespace, client: Client) -> Any:
    preset, _ = find(args.name, client)
    text = yaml.safe_dump({"name": preset.name, **preset.document()}, sort_keys=False)
    if args.file in (None, "-"):
        sys.stdout.write(text)
        return None
    Path(args.file).write_text(text, encoding="utf-8")
    return {"exported": preset.name, "file": args.file, "digest": preset.digest}


@refusals
def import_preset(args: argparse.Namespace, client: Client) -> Any:
    preset = read(Path(args.file), check_name(args.as_) if args.as_ else None)
    return {"name": preset.name, "status": write(preset, args.force), "digest": preset.digest}


@refusals
def report(args: argparse.Namespace, client: Client) -> Any:
    """Your workflows started from preset NAME, with whether each used its current content."""
    current = None
    try:
        current = find(args.name, client)[0].digest
    except Refused:
        pass  # a preset deleted since: its workflows are still listed
    me = client.get("/v4/auth/whoami").get("user_id")
    rows = []
    for w in client.get("/v4/workflows")["workflows"]:
        notes = w.get("annotations") or {}
        if notes.get(PRESET_ANNOTATION) != args.name or (not args.all and str(w["owner"].get("user_id")) != str(me)):
            continue
        digest = notes.get(DIGEST_ANNOTATION, "")
        rows.append({"id": w["id"], "name": w["name"], "status": w["status"], "submitted_at": w["submitted_at"],
                     "digest": digest[:19], "current": "yes" if current and digest == current else "no"})
    return rows


def register(commands: Any, common: argparse.ArgumentParser) -> None:
    group = commands.add_parser("preset", help="named sets of `workflow start` options (client-side)",
                                description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = group.add_subparsers(dest="action", metavar="ACTION", required=True)
    p = sub.add_parser("list", parents=[common], help="presets here and on the server")
    p.set_defaults(handler=list_presets, columns=COLUMNS, wide_columns=["options"])
    p = sub.add_parser("show", parents=[common], help="one preset (here first, else the server's) with its digest")
    p.add_argument("name", metavar="NAME")
    p.set_defaults(handler=show)
    p = sub.add_parser("pull", parents=[common], help="copy the server's presets here (all, or those named)")
    p.add_argument("names", nargs="*", metavar="NAME")
    p.add_argument("--as", dest="as_", metavar="NEW_NAME", help="save the one pulled preset under this name")
    p.add_argument("--force", action="store_true", help="replace a different local preset (kept as NAME.yaml.bak)")
    p.set_defaults(handler=pull, columns=["name", "from", "status"])
    p = sub.add_parser("export", parents=[common], help="write a preset as a file to share (stdout by default)")
    p.add_argument("name", metavar="NAME")
    p.add_argument("-f", "--file", help="write here instead of standard output")
    p.set_defaults(handler=export)
    p = sub.add_parser("import", parents=[common], help="add a preset from a file")
    p.add_argument("file", metavar="FILE")
    p.add_argument("--as", dest="as_", metavar="NEW_NAME", help="save it under this name")
    p.add_argument("--force", action="store_true", help="replace a different local preset (kept as NAME.yaml.bak)")
    p.set_defaults(handler=import_preset)
    p = sub.add_parser("report", parents=[common], help="your workflows started from preset NAME")
    p.add_argument("name", metavar="NAME")
    p.add_argument("--all", action="store_true", help="every workflow you can see, not only yours")
    p.set_defaults(handler=report, columns=["id", "name", "status", "submitted_at", "digest", "current"])
