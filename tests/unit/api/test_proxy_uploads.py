"""Uploads through the endpoint proxy stream to the service as they arrive: none is held whole by the API."""

from __future__ import annotations

import asyncio
import hashlib
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest

from tests.unit.api.served import serving, trickle
from tests.unit.api.test_endpoint_routes import bound_api

MIB = 2**20
FIRST = b"a" * MIB
REST = [bytes([65 + n]) * MIB for n in range(1, 8)]  # 8 MiB in all: twice the API's body cap


class Counting(BaseHTTPRequestHandler):
    """Reads a POST in pieces (by length or chunked), tells the test when the first MiB is in, answers what it got."""

    first_mib = threading.Event()

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        digest, seen = hashlib.sha256(), 0
        for piece in self.pieces():
            digest.update(piece)
            seen += len(piece)
            if seen >= MIB:
                Counting.first_mib.set()
        answer = f"{seen} {digest.hexdigest()} {self.headers.get('Transfer-Encoding', '-')}".encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def pieces(self):
        if "Content-Length" in self.headers:
            left = int(self.headers["Content-Length"])
            while left:
                piece = self.rfile.read(min(left, 64 * 1024))
                left -= len(piece)
                yield piece
            return
        while size := int(self.rfile.readline().split(b";")[0], 16):
            yield self.rfile.read(size)
            self.rfile.readline()
        self.rfile.readline()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def service():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Counting)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


def upload(app, token: str, declared: bool) -> httpx.Response:
    """POST 8 MiB whose later parts are produced only once the service holds the first MiB: a proxy that read
    the body whole before sending it on would wait forever here (and the test would fail on the wait)."""
    Counting.first_mib.clear()

    async def body():
        yield FIRST
        arrived = await asyncio.get_running_loop().run_in_executor(None, Counting.first_mib.wait, 10)
        assert arrived, "the service saw nothing of the upload while the client was still sending it"
        for part in REST:
            yield part

    async def run() -> httpx.Response:
        headers = {"FB-Authorization": f"Bearer {token}"}
        if declared:
            headers["Content-Length"] = str(MIB * 8)
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://roving.test") as client:
            try:
                return await client.post("/endpoints/llm/upload", headers=headers, content=body(), timeout=30)
            finally:
                await app.state.proxy_client.aclose()
    return asyncio.run(run())


def expected() -> str:
    return hashlib.sha256(FIRST + b"".join(REST)).hexdigest()


def test_an_upload_of_declared_length_reaches_the_service_while_it_is_still_being_sent(service):
    api, alice = bound_api(service)
    answer = upload(api.app, alice, declared=True)
    assert answer.status_code == 200, answer.text
    assert answer.text == f"{8 * MIB} {expected()} -"  # its length passed on: the service reads no chunks


def test_a_chunked_upload_streams_chunked_and_is_not_held_to_the_api_body_cap(service):
    api, alice = bound_api(service)
    answer = upload(api.app, alice, declared=False)
    assert answer.status_code == 200, answer.text
    assert answer.text == f"{8 * MIB} {expected()} chunked"


def test_an_upload_that_stalls_is_cut_off_with_408_not_blamed_on_the_service(service):
    env = {"ROVING_BODY_TIMEOUT": "1s"}
    api, alice = bound_api(service, env=env)
    head = (f"POST /endpoints/llm/upload HTTP/1.1\r\nHost: x\r\nFB-Authorization: Bearer {alice}\r\n"
            "Content-Length: 200000\r\n\r\n").encode() + b"x" * 100_000

    async def scenario():
        async with serving(api.app, env) as port:
            return await trickle(port, head, b"", 0.2, 10)

    answer, seconds = asyncio.run(scenario())
    assert answer.startswith(b"HTTP/1.1 408") and b"connection: close" in answer and seconds < 5
