"""`object://` transfers: an ingress reads one of the owner's objects into the volume, an egress puts a file of the
volume as an object, through the API with the workflow's own token (FB_WORKFLOW_TOKEN and ROVING_API in the
stage's environment: api.http.workflow_tokens, api.agent.agent). An egress never replaces an object that holds
other content (the object store's rule without --force): the stage fails saying so."""

from __future__ import annotations

import hashlib
import os
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from urllib.parse import quote

from domain.objects.names import ObjectNameError, Scope, parse_location

CHUNK = 1 << 20
RETRYABLE_STATUS = frozenset({408, 425, 429, 500, 502, 503, 504})
Count = Callable[[int], None]


class ObjectTransferError(Exception):
    """A failure a retry cannot fix (adapters.transfer_remote turns it into Permanent)."""


def object_url(uri: str) -> tuple[str, dict[str, str]]:
    """The API's URL for `uri` and the headers that carry the workflow's token."""
    api, token = os.environ.get("ROVING_API", "").rstrip("/"), os.environ.get("FB_WORKFLOW_TOKEN", "")
    if not api or not token:
        raise ObjectTransferError("object:// needs the workflow's token (FB_WORKFLOW_TOKEN) and ROVING_API, which "
                                  "this stage was not given (its token may have been revoked)")
    try:
        location = parse_location(uri)
    except ObjectNameError as error:
        raise ObjectTransferError(error.reason) from None
    if location.is_folder:
        raise ObjectTransferError(f"{uri} is a folder; name one object")
    group = f"/{quote(location.group, safe='')}" if location.scope is Scope.GROUP else ""
    return f"{api}/v4/objects/{location.scope.value}{group}/{quote(location.name)}", {"Authorization": f"Bearer {token}"}


def download(uri: str, partial: Path, count: Count) -> None:
    url, headers = object_url(uri)
    try:
        response = urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=60)  # noqa: S310
    except urllib.error.HTTPError as error:
        raise _refused(error.code, error.read().decode(errors="replace")) from None
    digest = hashlib.sha256()
    with response, partial.open("wb") as out:
        size = response.headers.get("content-length")
        if size and size.isdigit() and hasattr(count, "total"):
            count.total = int(size)
        buffer = memoryview(bytearray(CHUNK))
        while read := response.readinto(buffer):
            out.write(buffer[:read])
            digest.update(buffer[:read])
            count(read)
    if digest.hexdigest() != response.headers.get("roving-object-sha256", digest.hexdigest()):
        raise OSError(f"{uri} changed while it was read")  # worth a retry: the next read gets the new one whole


def upload(path: Path, uri: str, count: Count) -> None:
    import httpx

    url, headers = object_url(uri)
    headers["Content-Length"] = str(path.stat().st_size)

    def chunks() -> Iterator[bytes]:
        with path.open("rb") as source:
            while chunk := source.read(CHUNK):
                count(len(chunk))
                yield chunk

    response = httpx.put(url, content=chunks(), headers=headers, timeout=httpx.Timeout(60.0, read=300.0))
    if response.status_code >= 400:
        raise _refused(response.status_code, response.text)


def _refused(status: int, body: str) -> Exception:
    import json

    try:
        message = json.loads(body).get("error") or body
    except ValueError:
        message = body
    text = f"HTTP {status}: {str(message).strip()[:300]}"
    return OSError(text) if status in RETRYABLE_STATUS else ObjectTransferError(text)
