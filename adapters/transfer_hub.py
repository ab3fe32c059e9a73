"""`hf://` ingress: files of a Hugging Face repository (model, dataset or space) into the volume, through
huggingface_hub against `HF_ENDPOINT` (the node's, for a mirror; huggingface.co otherwise), with an `hf` secret.

    hf://ORG/REPO[/PATH][?revision=REV&type=model|dataset|space&include=GLOB,GLOB&exclude=GLOB]

PATH narrows the download to that file or folder; the destination is the folder in the volume they land in.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

TYPES = ("model", "dataset", "space")


class HubError(ValueError):
    """An hf:// URI that cannot mean a repository (a retry would not help)."""


def parse(uri: str) -> dict:
    parts = urlsplit(uri)
    segments = [s for s in (parts.netloc + parts.path).split("/") if s]
    if len(segments) < 2:
        raise HubError(f"{uri} should be hf://ORG/REPO[/PATH]")
    query = {k: ",".join(v) for k, v in parse_qs(parts.query).items()}
    unknown = set(query) - {"revision", "type", "include", "exclude"}
    if unknown:
        raise HubError(f"{uri}: unknown parameter {', '.join(sorted(unknown))} (revision, type, include, exclude)")
    kind = query.get("type", "model")
    if kind not in TYPES:
        raise HubError(f"{uri}: type must be model, dataset or space, not {kind}")
    path = "/".join(segments[2:])
    include = [p for p in query.get("include", "").split(",") if p]
    if path:
        include = [f"{path}/{p}" for p in include] if include else [path, f"{path}/*", f"{path}/**"]
    return {"repo_id": "/".join(segments[:2]), "repo_type": kind, "revision": query.get("revision") or None,
            "allow_patterns": include or None,
            "ignore_patterns": [p for p in query.get("exclude", "").split(",") if p] or None}


def token_of(secret: str) -> str | None:
    """An `hf` secret: the token itself, or JSON with a `token` field."""
    if not secret:
        return None
    try:
        fields = json.loads(secret)
    except ValueError:
        return secret.strip()
    return str(fields.get("token", "")) or None if isinstance(fields, dict) else None


def fetch(uri: str, folder: Path, secret: str, count: Callable[[int], None]) -> None:
    os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
    from huggingface_hub import snapshot_download  # only a node that moves hf:// files pays for importing it

    folder.mkdir(parents=True, exist_ok=True)
    snapshot_download(**parse(uri), local_dir=str(folder), token=token_of(secret),
                      endpoint=os.environ.get("HF_ENDPOINT") or None)
    shutil.rmtree(folder / ".cache" / "huggingface", ignore_errors=True)  # its bookkeeping, not the user's files
    if (folder / ".cache").is_dir() and not any((folder / ".cache").iterdir()):
        (folder / ".cache").rmdir()
    count(sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()))
