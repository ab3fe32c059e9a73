"""What the object store keeps beside an object's bytes: its metadata (nats-py's ObjectInfo JSON, with who put it
in two headers), the bucket a holder's objects live in, the subjects and digests of nats-py's layout, and the quota
a holder's bucket is held to."""

from __future__ import annotations

import base64
from typing import Any

import msgspec

from domain.objects.access import Holder

UPLOADER = "Roving-Uploaded-By"  # metadata headers: who put the object (user id, then name)
UPLOADER_NAME = "Roving-Uploaded-By-Name"


class ObjectMeta(msgspec.Struct, frozen=True, kw_only=True):
    name: str
    size: int
    digest: str  # "SHA-256=<base64url>", as nats-py writes it
    modified: str
    uploaded_by: str = ""
    uploaded_by_name: str = ""
    nuid: str = ""
    chunks: int = 0
    sequence: int = 0  # the metadata message's stream sequence: what a commit expects to find

    @property
    def sha256(self) -> str:
        """The digest as hex, as `sha256sum` prints it."""
        raw = self.digest.split("=", 1)[-1]
        return base64.urlsafe_b64decode(raw + "=" * (-len(raw) % 4)).hex() if raw else ""

    def shown(self) -> dict[str, Any]:
        return {"name": self.name, "size": self.size, "sha256": self.sha256, "modified": self.modified,
                "uploaded_by": self.uploaded_by_name or self.uploaded_by}


class Quota(msgspec.Struct, frozen=True, kw_only=True):
    """What one holder's objects may hold (`bytes` as JetStream stores them, chunks and metadata), and what all
    holders' together may (`store_bytes`: the object store's room, apart from the log's; 0 for no total)."""

    bytes: int
    objects: int
    store_bytes: int = 0


def bucket_name(cluster: str, holder: Holder) -> str:
    """`ROVING_OBJ_<cluster>_<u|g>_<id hex>`: a holder's bucket (cluster names are [a-z0-9_-], as buckets allow)."""
    return f"ROVING_OBJ_{cluster}_{holder.scope.value[0]}_{holder.owner_id.hex}"


def digest_text(sha: bytes) -> str:
    return "SHA-256=" + base64.urlsafe_b64encode(sha).decode()


def meta_subject(bucket: str, name: str) -> str:
    return f"$O.{bucket}.M.{base64.urlsafe_b64encode(name.encode()).decode()}"


def meta_of(info: dict[str, Any], sequence: int) -> ObjectMeta:
    headers = info.get("headers") or {}

    def header(key: str) -> str:
        value = headers.get(key) or [""]
        return str(value[0] if isinstance(value, list) else value)

    return ObjectMeta(name=str(info.get("name", "")), size=int(info.get("size") or 0), digest=str(info.get("digest") or ""),
                      modified=str(info.get("mtime") or ""), uploaded_by=header(UPLOADER),
                      uploaded_by_name=header(UPLOADER_NAME), nuid=str(info.get("nuid") or ""),
                      chunks=int(info.get("chunks") or 0), sequence=sequence)
