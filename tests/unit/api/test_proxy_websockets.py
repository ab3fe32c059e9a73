"""WebSockets through `/endpoints/NAME/`: a real WebSocket echo service behind an endpoint, the API on a real socket."""

from __future__ import annotations

import asyncio
import threading

import pytest
from websockets.asyncio.client import connect
from websockets.asyncio.server import ServerConnection, serve
from websockets.exceptions import ConnectionClosed, InvalidStatus

from tests.unit.api.served import serving
from tests.unit.api.test_endpoint_routes import bound_api


async def echo(ws: ServerConnection) -> None:
    """`/hello` first says what the service saw of the handshake; `/bye` closes with 4001; every message comes back."""
    path = ws.request.path
    if path.startswith("/hello"):
        headers = ws.request.headers
        await ws.send(f"path={path} auth={headers.get('Authorization')} fb={headers.get('FB-Authorization')} "
                      f"protocol={ws.subprotocol}")
    if path == "/bye":
        await ws.close(4001, "done")
        return
    async for message in ws:
        await ws.send(message)


def echo_v1(ws: ServerConnection, offered: list[str]) -> str | None:
    return "echo.v1" if "echo.v1" in offered else None


@pytest.fixture(scope="module")
def service():
    """The echo service on its own loop in a thread, for the tests' loops to reach over loopback."""
    loop, ready = asyncio.new_event_loop(), threading.Event()
    holder: dict = {}

    async def main() -> None:
        holder["server"] = await serve(echo, "127.0.0.1", 0, select_subprotocol=echo_v1)
        holder["port"] = holder["server"].sockets[0].getsockname()[1]
        ready.set()
        await holder["server"].serve_forever()

    thread = threading.Thread(target=loop.run_until_complete, args=(main(),), daemon=True)
    thread.start()
    assert ready.wait(10)
    yield holder["port"]
    loop.call_soon_threadsafe(holder["server"].close)
    thread.join(10)
    loop.close()


def run(app, scenario):
    async def main():
        async with serving(app) as port:
            return await scenario(f"ws://127.0.0.1:{port}/endpoints/llm")
    return asyncio.run(asyncio.wait_for(main(), 30))


def test_text_and_binary_messages_echo_through_the_endpoint(service):
    api, alice = bound_api(service)

    async def scenario(base: str):
        async with connect(f"{base}/hello?x=1", additional_headers={"FB-Authorization": f"Bearer {alice}",
                                                                   "Authorization": "Bearer sk-own"},
                           subprotocols=["echo.v1"]) as ws:
            greeting = await ws.recv()
            await ws.send("ping")
            text = await ws.recv()
            await ws.send(b"\x00\x01binary")
            binary = await ws.recv()
            return greeting, text, binary, ws.subprotocol

    greeting, text, binary, protocol = run(api.app, scenario)
    assert greeting == "path=/hello?x=1 auth=Bearer sk-own fb=None protocol=echo.v1"  # the Roving token stays here
    assert (text, binary, protocol) == ("ping", b"\x00\x01binary", "echo.v1")


def test_a_close_from_the_service_reaches_the_caller_with_its_code(service):
    api, alice = bound_api(service)

    async def scenario(base: str):
        async with connect(f"{base}/bye", additional_headers={"FB-Authorization": f"Bearer {alice}"}) as ws:
            with pytest.raises(ConnectionClosed) as closed:
                await ws.recv()
            return closed.value.rcvd.code

    assert run(api.app, scenario) == 4001


def refusal(app, headers: dict[str, str]) -> tuple[int, bytes]:
    async def scenario(base: str):
        with pytest.raises(InvalidStatus) as refused:
            async with connect(f"{base}/", additional_headers=headers):
                pass
        return refused.value.response.status_code, refused.value.response.body
    return run(app, scenario)


def test_without_a_token_a_private_endpoints_websocket_is_refused(service):
    api, _ = bound_api(service)
    status, body = refusal(api.app, {})
    assert status == 401 and b"FB-Authorization" in body


def test_another_tenants_user_is_told_there_is_no_such_endpoint(service):
    api, _ = bound_api(service)
    _, bob = api.organization_with_user("other", "bob")
    assert refusal(api.app, {"FB-Authorization": f"Bearer {bob}"})[0] == 404


def test_a_public_endpoints_websocket_needs_no_token(service):
    api, _ = bound_api(service, scope="public")

    async def scenario(base: str):
        async with connect(f"{base}/") as ws:
            await ws.send("anyone")
            return await ws.recv()

    assert run(api.app, scenario) == "anyone"


def test_a_service_that_is_not_a_websocket_is_a_502_naming_its_answer(service):
    import http.server

    plain = http.server.ThreadingHTTPServer(("127.0.0.1", 0), http.server.SimpleHTTPRequestHandler)
    threading.Thread(target=plain.serve_forever, daemon=True).start()
    try:
        api, alice = bound_api(plain.server_address[1])
        status, body = refusal(api.app, {"FB-Authorization": f"Bearer {alice}"})
    finally:
        plain.shutdown()
        plain.server_close()
    assert status == 502 and b"refused the WebSocket with HTTP" in body
