"""The CLI's HTTP client: the context (address and token) from ~/.config/roving/config.yaml or ROVING_API/ROVING_TOKEN.

A context from `roving context login` also holds a refresh token: when the server says the access token has
expired, the client spends it once for a new pair, saves that, and sends the request again.

A 503 with `Retry-After` (the log takes no writes now, the server is busy) is waited out: the client says so on
stderr and sends the request again after the pause, for up to WAIT_SECONDS (ROVING_CLI_WAIT) in all. Every write
carries an `Idempotency-Key`, the same on each try, so a submit that landed before its answer was lost is not made
twice (api/http/log_bound.py).
"""

from __future__ import annotations

import fcntl
import os
import socket
import ssl
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import yaml

DEFAULT_API = "http://127.0.0.1:8080"
WAIT_SECONDS = 300.0  # how long a command waits out a server that answers "try again" (ROVING_CLI_WAIT overrides)
READS = frozenset({"GET", "HEAD", "OPTIONS"})


class ApiError(Exception):
    """The server refused (or could not be reached); the message is what to show the user."""


def config_path() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "roving" / "config.yaml"


def load_contexts(path: Path | None = None) -> dict[str, Any]:
    path = path or config_path()
    if not path.exists():
        return {"current": "default", "contexts": {}}
    data = yaml.safe_load(path.read_text()) or {}
    return {"current": data.get("current", "default"), "contexts": dict(data.get("contexts") or {})}


def save_contexts(data: dict[str, Any], path: Path | None = None) -> Path:
    """Written 0600: the file holds tokens."""
    path = path or config_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as out:
        yaml.safe_dump(data, out, sort_keys=False)
    return path


def current_context(environ: dict[str, str] | None = None, path: Path | None = None) -> dict[str, str]:
    """The current context's `api` and `token`; ROVING_API and ROVING_TOKEN (then FB_WORKFLOW_TOKEN) win over the
    file."""
    env = os.environ if environ is None else environ
    data = load_contexts(path)
    found = dict(data["contexts"].get(data["current"]) or {})
    # a token given by hand is used as it is (never refreshed); inside a job, the workflow's own (FB_WORKFLOW_TOKEN)
    # wins over any file, so a child workflow is the job's owner's and ends with it
    token = env.get("ROVING_TOKEN") or env.get("FB_WORKFLOW_TOKEN")
    return {"api": env.get("ROVING_API") or found.get("api") or DEFAULT_API,
            "token": token or found.get("token") or "", "refresh_token": "" if token else found.get("refresh_token", "")}


def context_renewer(api: str, path: Path | None = None, transport: Any = None) -> Callable[[str], str]:
    """Renews the current context's tokens: given the access token that expired, the one to use now. Under a lock
    on the context file, so two commands at once spend the refresh token once (a second spend would be taken for
    a stolen copy and end the login); the later one finds the pair the first saved."""
    def renew(expired: str) -> str:
        path_ = path or config_path()
        path_.parent.mkdir(parents=True, exist_ok=True)
        with open(path_.with_name(path_.name + ".lock"), "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            data = load_contexts(path_)
            found = dict(data["contexts"].get(data["current"]) or {})
            if found.get("token") and found["token"] != expired:
                return str(found["token"])
            if not found.get("refresh_token"):
                raise ApiError("the access token has expired; log in again: roving context login USERNAME")
            try:
                with Client(api, transport=transport) as client:
                    answer = client.post("/v4/auth/refresh", {"refresh_token": found["refresh_token"]})
            except ApiError as error:
                raise ApiError(f"{error}; log in again: roving context login USERNAME") from None
            found.update(token=answer["token"], refresh_token=answer["refresh_token"])
            data["contexts"][data["current"]] = found
            save_contexts(data, path_)
            return str(answer["token"])
    return renew


def message_of(response: httpx.Response) -> str:
    """The server's own words: its `errors` list joined, or its text."""
    try:
        body = response.json()
    except ValueError:
        return response.text.strip() or f"HTTP {response.status_code}"
    errors = body.get("errors") if isinstance(body, dict) else None
    if errors:
        return "; ".join(f"{e['path']}: {e['message']}" if e.get("path") else e["message"] for e in errors)
    return str(body.get("error") if isinstance(body, dict) else body)


# What an unreachable API is, in words (httpx's own text is "[Errno 111] Connection refused")
UNREACHABLE: tuple[tuple[type[BaseException], str], ...] = (
    (httpx.ConnectTimeout, "no answer in time"),
    (httpx.ReadTimeout, "it stopped answering (read timed out)"),
    (ConnectionRefusedError, "nothing answers there (connection refused): is the control plane running, and is "
                             "this its address (ROVING_API, or `roving context`)?"),
    (socket.gaierror, "the host name does not resolve"),
    (ssl.SSLCertVerificationError, "its TLS certificate is not trusted"),
    (httpx.RemoteProtocolError, "it closed the connection mid-answer"),
)


def unreachable(base_url: Any, error: BaseException) -> str:
    """`cannot reach URL: why`, the why in words where the failure is a known one."""
    chain: list[BaseException] = []
    seen: BaseException | None = error
    while seen is not None and len(chain) < 5:
        chain.append(seen)
        seen = seen.__cause__ or seen.__context__
    words = next((text for e in chain for kind, text in UNREACHABLE if isinstance(e, kind)), str(error))
    return f"cannot reach {base_url}: {words}"


def expired(response: httpx.Response) -> bool:
    """The server refused the access token because its time ran out (api.http.auth says `token refused: expired`)."""
    return response.status_code == 401 and "token refused: expired" in message_of(response)


def wait_seconds() -> float:
    """ROVING_CLI_WAIT, else WAIT_SECONDS; 0 never waits."""
    try:
        return max(0.0, float(os.environ.get("ROVING_CLI_WAIT") or WAIT_SECONDS))
    except ValueError:
        return WAIT_SECONDS


def retry_after(response: httpx.Response) -> float | None:
    """The pause a 503 asks for (its Retry-After seconds, at least 1, at most 30); None for any other answer."""
    raw = response.headers.get("retry-after", "")
    if response.status_code != 503 or not raw.isdigit():
        return None
    return float(min(max(int(raw), 1), 30))


class Client:
    """A thin synchronous client; every method returns decoded JSON or raises ApiError."""

    def __init__(self, api: str, token: str = "", timeout: float = 30.0, transport: Any = None,
                 renew: Callable[[str], str] | None = None) -> None:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self.http = httpx.Client(base_url=api, headers=headers, timeout=timeout, transport=transport,
                                 event_hooks={"response": [self._remember_position]})
        self.token, self.renew = token, renew
        self.position = 0  # the furthest log position an answer reflected; sent along, so reads see earlier writes

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Its connections go now: the response hook ties the two clients in a cycle, which only the garbage
        collector would otherwise break (an in-process caller would hold the sockets open until then)."""
        self.http.close()

    def _remember_position(self, response: httpx.Response) -> None:
        """Several API workers share the address: the next request, whichever answers it, waits for this position."""
        raw = response.headers.get("roving-position", "")
        if raw.isdigit() and int(raw) > self.position:
            self.position = int(raw)
            self.http.headers["Roving-Position"] = raw

    def send(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        """The server's answer as it is (an expired access token renewed once, a "try again" waited out); ApiError only
        if unreachable."""
        if method.upper() not in READS:  # one key for every try of this write
            kwargs["headers"] = {"Idempotency-Key": uuid.uuid4().hex, **(kwargs.get("headers") or {})}
        deadline = time.monotonic() + wait_seconds()
        while True:
            response = self._send_once(method, path, **kwargs)
            pause = retry_after(response)
            if pause is None or time.monotonic() + pause > deadline:
                return response
            print(f"roving: {message_of(response)}; waiting {pause:g}s and trying again", file=sys.stderr, flush=True)
            time.sleep(pause)

    def _send_once(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        response = self._send(method, path, **kwargs)
        if self.renew is not None and expired(response):
            self.token = self.renew(self.token)
            self.http.headers["Authorization"] = f"Bearer {self.token}"
            response = self._send(method, path, **kwargs)
        return response

    def request(self, method: str, path: str, **kwargs: Any) -> Any:
        response = self.send(method, path, **kwargs)
        if response.status_code >= 400:
            raise ApiError(self.refusal(response))
        if response.headers.get("content-type", "").startswith("application/json"):
            return response.json()
        return response.text

    def refusal(self, response: httpx.Response) -> str:
        """The server's words; with no token at all, what to do about it rather than which header is missing."""
        if response.status_code == 401 and not self.token:
            return (f"not signed in to {self.http.base_url}: run `roving context login USERNAME --api "
                    f"{self.http.base_url}` (or set ROVING_TOKEN) (HTTP 401)")
        return f"{message_of(response)} (HTTP {response.status_code})"

    def _send(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        try:
            return self.http.request(method, path, **kwargs)
        except httpx.HTTPError as error:
            raise ApiError(unreachable(self.http.base_url, error)) from None

    def get(self, path: str, **params: Any) -> Any:
        return self.request("GET", path, params={k: v for k, v in params.items() if v is not None})

    def post(self, path: str, json: Any = None) -> Any:
        return self.request("POST", path, json=json)

    def put(self, path: str, json: Any = None) -> Any:
        return self.request("PUT", path, json=json)

    def delete(self, path: str) -> Any:
        return self.request("DELETE", path)

    def stream(self, path: str) -> Iterator[str]:
        """Lines of a server-sent event stream."""
        try:
            with self.http.stream("GET", path, timeout=None) as response:
                if response.status_code >= 400:
                    response.read()
                    raise ApiError(self.refusal(response))
                yield from response.iter_lines()
        except httpx.HTTPError as error:
            raise ApiError(unreachable(self.http.base_url, error)) from None
