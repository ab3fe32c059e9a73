"""A refused image pull says why in the same words a refused transfer does (adapters.net_words), naming the
registry, instead of skopeo's "pinging container registry ...: dial tcp ...: connect: connection refused"."""

import shutil
import socket

import pytest

from adapters.net_words import REFUSED, TIMEOUT, UNRESOLVED, UNTRUSTED
from adapters.pull_progress import tool_answer
from adapters.runtime.images import ImageCache
from adapters.runtime.registry import ImageError


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.skipif(shutil.which("skopeo") is None, reason="needs skopeo (Debian package skopeo)")
def test_a_pull_from_a_closed_loopback_port_says_nothing_answers_at_that_registry(tmp_path):
    port = closed_port()
    with pytest.raises(ImageError) as refused:
        ImageCache(tmp_path / "images").rootfs(f"docker://127.0.0.1:{port}/team/app:1")
    assert str(refused.value) == (f"image docker://127.0.0.1:{port}/team/app:1 cannot be pulled: {REFUSED} "
                                  f"(registry 127.0.0.1:{port})")


@pytest.mark.parametrize("message, words", [
    ('pinging container registry r.example: Get "https://r.example/v2/": dial tcp: lookup r.example on '
     "10.0.0.53:53: no such host", f"{UNRESOLVED} (registry r.example)"),
    ('pinging container registry r.example:5000: Get "https://r.example:5000/v2/": dial tcp 10.1.1.1:5000: '
     "i/o timeout", f"{TIMEOUT} (registry r.example:5000)"),
    ('pinging container registry r.example: Get "https://r.example/v2/": tls: failed to verify certificate: '
     "x509: certificate signed by unknown authority", f"{UNTRUSTED} (registry r.example)"),
    ("FATAL: while making image from oci registry: dial tcp 127.0.0.1:9: connect: connection refused", REFUSED),
])
def test_the_tools_network_failures_are_said_in_the_transfers_words(message, words):
    escaped = message.replace('"', '\\"')  # as skopeo's log line quotes it
    output = f'time="2026-12-07T03:00:05Z" level=fatal msg="{escaped}"\n' if "FATAL" not in message else message
    assert tool_answer(output, 1) == words


def test_a_registry_that_answered_keeps_its_own_answer():
    output = 'time="t" level=fatal msg="reading manifest 1 in r/a: unauthorized: authentication required"\n'
    assert tool_answer(output, 1) == "reading manifest 1 in r/a: unauthorized: authentication required"
