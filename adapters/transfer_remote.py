"""The remote ends of a transfer: http(s) GET and PUT, S3 get and put (with an S3 secret), the object store's
objects (adapters.transfer_objects), each streaming in chunks and counting bytes as they go. Errors that a retry
cannot fix are `Permanent`."""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import httpx

CHUNK = 1 << 20
RETRYABLE_STATUS = frozenset({408, 425, 429, 500, 502, 503, 504})
Count = Callable[[int], None]


class Permanent(Exception):
    """A failure a retry cannot fix (a 404, a refused credential, an unsupported scheme): the stage fails at once."""


def download(uri: str, target: Path, secret: str, count: Count) -> None:
    """`uri` into `target` (written beside it first, then renamed: a reader never sees half a file); an hf://
    repository's files into the folder `target`."""
    if uri.startswith("hf://"):
        _hub(uri, target, secret, count)
        return
    partial = target.with_name(target.name + ".part")
    if uri.startswith(("http://", "https://")):
        _http_get(uri, partial, count)
    elif uri.startswith("s3://"):
        bucket, key = _bucket_key(uri)
        _s3_call(secret, lambda s3: s3.download_file(bucket, key, str(partial), Callback=count))
    elif uri.startswith("object://"):
        _objects(lambda objects: objects.download(uri, partial, count))
    else:
        raise Permanent(f"{uri.partition('://')[0]}:// ingress is not performed by this cluster yet")
    partial.replace(target)


def _hub(uri: str, folder: Path, secret: str, count: Count) -> None:
    from adapters import transfer_hub

    try:
        transfer_hub.fetch(uri, folder, secret, count)
    except transfer_hub.HubError as error:
        raise Permanent(str(error)) from None
    except Exception as error:
        status = getattr(getattr(error, "response", None), "status_code", None)
        if status is not None and status not in RETRYABLE_STATUS:
            raise Permanent(f"HTTP {status}: {str(error).splitlines()[0][:200]}") from None
        raise


def upload(path: Path, uri: str, secret: str, count: Count) -> None:
    if uri.startswith(("http://", "https://")):
        _http_put(path, uri, secret, count)
    elif uri.startswith("s3://"):
        bucket, key = _bucket_key(uri)
        _s3_call(secret, lambda s3: s3.upload_file(str(path), bucket, key, Callback=count))
    elif uri.startswith("object://"):
        _objects(lambda objects: objects.upload(path, uri, count))
    else:
        raise Permanent(f"egress to {uri.partition('://')[0]}:// is not performed by this cluster")


def _http_get(uri: str, partial: Path, count: Count) -> None:
    """http.client reads straight into our buffer: about 3x httpx's streaming rate, at curl's (ops/bench/ingress.py)."""
    try:
        response = urllib.request.urlopen(uri, timeout=60)  # noqa: S310 - the scheme was checked: http(s) only
    except urllib.error.HTTPError as error:
        with error:  # it holds the answer's connection open: a refusal must not leave it to the garbage collector
            _check_status(error.code, str(error.reason))
        raise
    with response, partial.open("wb") as out:
        size = response.headers.get("content-length")
        if size and size.isdigit() and hasattr(count, "total"):
            count.total = int(size)  # a Progress shows "N of M"
        buffer = memoryview(bytearray(CHUNK))
        while read := response.readinto(buffer):
            out.write(buffer[:read])
            count(read)


def _http_put(path: Path, uri: str, secret: str, count: Count) -> None:
    """A PUT of the file's bytes; a secret, when given, is sent as a bearer token."""
    import httpx  # only egress pays for importing it (an ingress stage starts ~0.1 s sooner)

    headers = {"Authorization": f"Bearer {secret}"} if secret else {}
    headers["Content-Length"] = str(path.stat().st_size)

    def chunks() -> Iterator[bytes]:
        with path.open("rb") as source:
            while chunk := source.read(CHUNK):
                count(len(chunk))
                yield chunk

    response = httpx.put(uri, content=chunks(), headers=headers, follow_redirects=True, timeout=60)
    _check(response)


def _objects(call: Callable) -> None:
    """An object:// transfer (adapters.transfer_objects), its lasting refusals as Permanent."""
    from adapters import transfer_objects

    try:
        call(transfer_objects)
    except transfer_objects.ObjectTransferError as error:
        raise Permanent(str(error)) from None


def _check(response: httpx.Response) -> None:
    if response.status_code >= 400:
        _check_status(response.status_code, response.reason_phrase)


def _check_status(status: int, phrase: str) -> None:
    text = f"HTTP {status} {phrase}".strip()
    if status in RETRYABLE_STATUS:
        raise OSError(text)
    raise Permanent(text)


def _bucket_key(uri: str) -> tuple[str, str]:
    bucket, _, key = uri.removeprefix("s3://").partition("/")
    if not bucket or not key:
        raise Permanent(f"{uri} should be s3://BUCKET/KEY")
    return bucket, key


def s3_credentials(secret: str) -> dict[str, str | None]:
    """An S3 secret: JSON with access_key_id, secret_access_key and optionally session_token, region, endpoint;
    or `ACCESS_KEY_ID:SECRET_ACCESS_KEY`. boto3's own names (aws_access_key_id, ...) are accepted too."""
    if not secret:
        return {}
    try:
        fields = json.loads(secret)
    except ValueError:
        key, sep, value = secret.partition(":")
        if not sep:
            raise Permanent("the S3 secret is neither JSON nor ACCESS_KEY_ID:SECRET_ACCESS_KEY") from None
        fields = {"access_key_id": key, "secret_access_key": value}
    if not isinstance(fields, dict):
        raise Permanent("the S3 secret's JSON is not an object")
    plain = {k.lower().removeprefix("aws_"): str(v) for k, v in fields.items()}
    return {"aws_access_key_id": plain.get("access_key_id", ""),
            "aws_secret_access_key": plain.get("secret_access_key", ""),
            "aws_session_token": plain.get("session_token") or None,
            "region_name": plain.get("region") or plain.get("region_name") or "us-east-1",
            "endpoint_url": plain.get("endpoint") or plain.get("endpoint_url") or os.environ.get("AWS_ENDPOINT_URL")}


def _s3(secret: str):
    import boto3  # only a node that moves S3 files pays for importing it
    from botocore.config import Config

    options = {k: v for k, v in s3_credentials(secret).items() if v}
    return boto3.client("s3", config=Config(retries={"max_attempts": 1}), **options)


def _s3_call(secret: str, call: Callable[[Any], None]) -> None:
    """`call` with an S3 client made from `secret`, closed after (its pool holds connections open otherwise)."""
    from botocore.exceptions import BotoCoreError, ClientError

    client = None
    try:
        client = _s3(secret)
        call(client)
    except ClientError as error:
        code = str(error.response.get("Error", {}).get("Code", ""))
        status = int(error.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0) or 0)
        text = f"S3 {code or status}: {error.response.get('Error', {}).get('Message', '')}".strip(": ")
        if status in RETRYABLE_STATUS or code in ("SlowDown", "RequestTimeout", "InternalError"):
            raise OSError(text) from None
        raise Permanent(text) from None
    except BotoCoreError as error:
        raise OSError(str(error)) from None
    finally:
        if client is not None:
            client.close()
