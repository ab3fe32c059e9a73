"""`roving secret create|list|delete|rotate-key`: scoped secrets that jobs read as `secret://` env references.

The value comes from --value, --from-file (its bytes as they are) or standard input (one trailing newline
dropped, so `echo token | roving secret create hf` stores `token`); it is never printed back.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any
from uuid import UUID

from api.cli.client import Client
from domain.secrets import SecretError, check_name, check_value

COLUMNS = ["id", "name", "scope", "group", "reference", "created_by", "created_at"]
SCOPES = ["user", "group", "organization", "cluster"]


class Usage(Exception):
    """Bad usage found before asking the API: printed, exit 2."""


def value_of(args: argparse.Namespace) -> str:
    if args.value is not None and args.from_file is not None:
        raise Usage("give the value once: --value or --from-file, not both")
    if args.value is not None:
        text = args.value
    elif args.from_file is not None:
        text = _read_file(Path(args.from_file))
    else:
        text = sys.stdin.read()
        text = text[:-2] if text.endswith("\r\n") else text.removesuffix("\n")
    if not text:
        raise Usage("value: a secret value must not be empty (give --value, --from-file or standard input)")
    return text


def _read_file(path: Path) -> str:
    try:
        return path.read_bytes().decode()
    except OSError as error:
        raise Usage(f"--from-file: cannot read {path} ({error.strerror})") from None
    except UnicodeDecodeError:
        raise Usage(f"--from-file: {path} is not UTF-8 text") from None


def create(args: argparse.Namespace, client: Client) -> Any:
    try:
        body = {"name": check_name(args.name), "value": value_of(args), "scope": args.scope}
        check_value(body["value"])
    except (Usage, SecretError) as error:
        return usage(error)
    if args.group:
        body["group"] = args.group
    return client.post("/v4/secrets", json=body)


def list_secrets(args: argparse.Namespace, client: Client) -> Any:
    rows = client.get("/v4/secrets")["secrets"]
    return [r for r in rows if args.scope in (None, r["scope"])]


def delete(args: argparse.Namespace, client: Client) -> Any:
    try:
        secret = str(UUID(args.secret))
    except ValueError:
        found = [r for r in client.get("/v4/secrets")["secrets"]
                 if r["name"] == args.secret and args.scope in (None, r["scope"])]
        if len(found) > 1:
            return usage(Usage(f"{len(found)} secrets are named {args.secret!r}; give --scope or the id"))
        if not found:
            print(f"roving: no secret named {args.secret!r} that you can see", file=sys.stderr)
            return 1
        secret = found[0]["id"]
    return client.delete(f"/v4/secrets/{secret}")


def rotate_key(args: argparse.Namespace, client: Client) -> Any:
    return client.post("/v4/secrets/-/rotate-key")


def usage(error: Exception) -> int:
    print(f"roving secret: {error}", file=sys.stderr)
    return 2


def register(commands: Any, common: argparse.ArgumentParser) -> None:
    group = commands.add_parser("secret", help="scoped secrets jobs read as secret:// env references")
    sub = group.add_subparsers(dest="action", metavar="ACTION", required=True)
    p = sub.add_parser("create", parents=[common], help="store a secret NAME (its value is never shown again)")
    p.add_argument("name", metavar="NAME", help="letters, digits, _ - and ., starting with a letter or digit")
    p.add_argument("--scope", default="user", choices=SCOPES)
    p.add_argument("--group", help="the group's name or id, for --scope group (default: the one group you own)")
    p.add_argument("--value", help="the value (it stays in your shell history: prefer --from-file or stdin)")
    p.add_argument("--from-file", metavar="PATH", help="read the value from a file, byte for byte")
    p.set_defaults(handler=create)
    p = sub.add_parser("list", parents=[common], help="secrets you may read: names and scopes, never values")
    p.add_argument("--scope", choices=SCOPES)
    p.set_defaults(handler=list_secrets, columns=COLUMNS)
    p = sub.add_parser("delete", parents=[common], help="delete a secret by id, or by name")
    p.add_argument("secret", metavar="SECRET", help="the secret's id, or its name")
    p.add_argument("--scope", choices=SCOPES, help="which scope's secret of that name")
    p.set_defaults(handler=delete)
    p = sub.add_parser("rotate-key", parents=[common], help="cluster admins: a new key, every secret resealed with it")
    p.set_defaults(handler=rotate_key)
