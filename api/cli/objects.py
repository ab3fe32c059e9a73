"""`roving object put|get|list|delete`: files kept in the cluster's object store, yours or your group's.

Locations are `object://user/PATH` (yours), `object://group/GROUP/PATH` (a group's; its members share them) or a
bare PATH (yours). A location ending in `/` is a folder: `put data.csv runs/` stores `runs/data.csv`, and
`get runs/data.csv ./` writes `./data.csv`. Files stream in and out in pieces, never held whole.

`put` over an object with other content is refused unless --force; the same content again changes nothing (and,
when the sizes and digests already match, sends nothing). `get` treats a local file the same way.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx

from api.cli import pages as paged
from api.cli.client import ApiError, Client, message_of, unreachable
from api.cli.completion import FILES
from api.cli.progress import Progress, for_people
from domain.objects.names import Location, ObjectNameError, Scope, parse_location

PIECE = 1 << 20
COLUMNS = ["object", "size", "modified", "uploaded_by"]
WIDE = ["sha256"]


def usage(message: str) -> int:
    print(f"roving: {message}", file=sys.stderr)
    return 2


def path_of(location: Location) -> str:
    group = f"/{quote(location.group, safe='')}" if location.scope is Scope.GROUP else ""
    return f"/v4/objects/{location.scope.value}{group}/{quote(location.name)}"


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as source:
        while piece := source.read(PIECE):
            digest.update(piece)
    return digest.hexdigest()


def pieces(source: Any, meter: Progress) -> Iterator[bytes]:
    while piece := source.read(PIECE):
        meter.advance(len(piece))
        yield piece


def put(args: argparse.Namespace, client: Client) -> Any:
    try:
        destination = parse_location(args.destination)
        if args.source == "-" and destination.is_folder:
            return usage(f"DEST: {destination.uri} is a folder; name the object when putting standard input")
        target = destination.inside(args.source)
    except ObjectNameError as error:
        return usage(f"DEST: {error.reason}")
    if args.source == "-":
        return _send(client, target, sys.stdin.buffer, Progress(f"put {target.uri}", None, for_people(args)),
                     args.force)
    source = Path(args.source)
    if not source.is_file():
        return usage(f"SRC: {args.source} is not a file you can read")
    size = source.stat().st_size
    there = _head(client, target)
    if there is not None:
        same = int(there.headers.get("content-length", -1)) == size and there.headers.get(
            "roving-object-sha256") == sha256_of(source)
        if same:
            return {"object": target.uri, "result": "unchanged", "size": size, "sha256": there.headers[
                "roving-object-sha256"]}
        if not args.force:
            raise ApiError(f"{target.uri} already exists with different content; put it with --force to replace it")
    with source.open("rb") as opened:
        return _send(client, target, opened, Progress(f"put {target.uri}", size, for_people(args)), args.force)


def _head(client: Client, location: Location) -> httpx.Response | None:
    response = client.send("HEAD", path_of(location))
    if response.status_code == 404:
        return None
    if response.status_code >= 400:  # a HEAD answer has no body: ask again for the reason
        raise ApiError(f"{message_of(client.send('GET', path_of(location)))} (HTTP {response.status_code})")
    return response


def _send(client: Client, target: Location, source: Any, meter: Progress, force: bool) -> Any:
    headers = {"Content-Type": "application/octet-stream"}
    if meter.total is not None:
        headers["Content-Length"] = str(meter.total)
    params = {"force": "true"} if force else {}
    try:
        response = client.http.put(path_of(target), content=pieces(source, meter), headers=headers, params=params,
                                   timeout=httpx.Timeout(30.0, read=300.0))
    except httpx.HTTPError as error:
        raise ApiError(unreachable(client.http.base_url, error)) from None
    finally:
        meter.finish()
    if response.status_code >= 400:
        raise ApiError(f"{message_of(response)} (HTTP {response.status_code})")
    answer = response.json()
    return {k: answer.get(k) for k in ("object", "result", "size", "sha256")}


def get(args: argparse.Namespace, client: Client) -> Any:
    try:
        source = parse_location(args.source)
    except ObjectNameError as error:
        return usage(f"SRC: {error.reason}")
    if source.is_folder:
        return usage(f"SRC: {source.uri} is a folder; name an object (roving object list shows them)")
    if args.destination == "-":
        return _download(client, source, None, args.force, False)
    target = Path(args.destination)
    if args.destination.endswith("/") or target.is_dir():
        target = target / Path(source.name).name
    return _download(client, source, target, args.force, for_people(args))


def _download(client: Client, source: Location, target: Path | None, force: bool, shown: bool) -> Any:
    there = _head(client, source)
    if there is None:
        raise ApiError(f"object {source.uri} not found (HTTP 404)")
    expected = there.headers.get("roving-object-sha256", "")
    if target is not None and target.is_file():
        if target.stat().st_size == int(there.headers.get("content-length", -1)) and sha256_of(target) == expected:
            return {"object": source.uri, "file": str(target), "result": "unchanged", "sha256": expected}
        if not force:
            raise ApiError(f"{target} already exists with different content; get it with --force to replace it")
    if target is not None:
        target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f".{target.name}.part") if target is not None else None
    meter = Progress(f"get {source.uri}", int(there.headers.get("content-length", 0)) or None, shown)
    try:
        size, digest = _receive(client, source, partial, meter)
    except BaseException:
        if partial is not None:
            partial.unlink(missing_ok=True)
        raise
    if digest != expected:
        if partial is not None:
            partial.unlink(missing_ok=True)
        raise ApiError(f"{source.uri} changed while it was read; get it again")
    if target is None or partial is None:  # (a partial file is made exactly when there is a target)
        return None
    os.replace(partial, target)
    return {"object": source.uri, "file": str(target), "result": "written", "size": size, "sha256": digest}


def _receive(client: Client, source: Location, partial: Path | None, meter: Progress) -> tuple[int, str]:
    """The object's bytes into `partial` (standard output when None); (size, sha256)."""
    digest, size = hashlib.sha256(), 0
    out = partial.open("wb") if partial is not None else sys.stdout.buffer
    try:
        with client.http.stream("GET", path_of(source), timeout=httpx.Timeout(30.0, read=300.0)) as response:
            if response.status_code >= 400:
                response.read()
                raise ApiError(f"{message_of(response)} (HTTP {response.status_code})")
            for piece in response.iter_bytes(PIECE):
                digest.update(piece)
                out.write(piece)
                size += len(piece)
                meter.advance(len(piece))
    except httpx.HTTPError as error:
        raise ApiError(f"reading {source.uri} failed: {error}") from None
    finally:
        meter.finish()
        if partial is not None:
            out.close()
        else:
            out.flush()
    return size, digest.hexdigest()


def list_objects(args: argparse.Namespace, client: Client) -> Any:
    try:
        location = parse_location(args.location)
    except ObjectNameError as error:
        return usage(f"LOCATION: {error.reason}")
    if args.page_size < 1 or args.page_size > 1000:
        return usage(f"--page-size: expected 1 to 1000, got {args.page_size}")
    if args.max_pages < 0:
        return usage(f"--max-pages: expected 0 (no limit) or more, got {args.max_pages}")
    rows: list[dict[str, Any]] = []
    pages = 0
    for answer in paged.answers(client, "/v4/objects", args.page_size, location=location.uri):
        rows, pages = rows + answer["objects"], pages + 1
        if not answer.get("next"):
            return rows
        if args.max_pages and pages >= args.max_pages:
            print(f"roving: more objects follow; showing {pages} page(s) of {args.page_size} "
                  "(raise --max-pages, or 0 for all)", file=sys.stderr)
            return rows
    return rows


def delete(args: argparse.Namespace, client: Client) -> Any:
    try:
        location = parse_location(args.location)
    except ObjectNameError as error:
        return usage(f"LOCATION: {error.reason}")
    if location.is_folder:
        return usage(f"LOCATION: {location.uri} is a folder; delete objects one by one")
    return client.delete(path_of(location))


def register(commands: Any, common: argparse.ArgumentParser) -> None:
    group = commands.add_parser("object", help="keep files in the cluster's object store (yours or your group's)",
                                description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = group.add_subparsers(dest="action", metavar="ACTION", required=True)
    p = sub.add_parser("put", parents=[common], help="store a local file (or - for standard input) as an object")
    p.add_argument("source", metavar="SRC", help="a local file, or - for standard input").complete = FILES
    p.add_argument("destination", metavar="DEST",
                   help="object://user/PATH, object://group/GROUP/PATH or PATH; ending in / adds SRC's file name")
    p.add_argument("--force", action="store_true", help="replace an object that holds other content")
    p.set_defaults(handler=put, columns=["object", "result", "size", "sha256"])
    p = sub.add_parser("get", parents=[common], help="write an object to a local file (or - for standard output)")
    p.add_argument("source", metavar="SRC", help="the object: object://user/PATH, object://group/GROUP/PATH or PATH")
    p.add_argument("destination", metavar="DEST",
                   help="a local file, a directory (ending in / or existing: the object's file name in it), or -")
    p.add_argument("--force", action="store_true", help="replace a local file that holds other content")
    p.set_defaults(handler=get, columns=["object", "file", "result", "size"])
    p = sub.add_parser("list", parents=[common], help="list objects, a page at a time",
                       description="Objects under LOCATION (default object://user/: all of yours), by name. "
                                   "-o wide adds each one's sha256.")
    p.add_argument("location", metavar="LOCATION", nargs="?", default="object://user/",
                   help="a folder or name prefix: object://group/ml/runs/, runs/ (default: object://user/)")
    p.add_argument("-p", "--page-size", type=int, default=100, help="objects asked for a page (1 to 1000; default 100)")
    p.add_argument("-m", "--max-pages", type=int, default=0, help="stop after this many pages (default 0: all)")
    p.set_defaults(handler=list_objects, columns=COLUMNS, wide_columns=WIDE)
    p = sub.add_parser("delete", parents=[common], help="delete an object")
    p.add_argument("location", metavar="LOCATION", help="object://user/PATH, object://group/GROUP/PATH or PATH")
    p.set_defaults(handler=delete)
