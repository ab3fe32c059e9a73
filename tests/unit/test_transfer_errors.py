"""A transfer that cannot reach its server says why in words in the stage's reason, not in Python's exception text
(`<urlopen error [Errno 111] Connection refused>`)."""

import socket

import pytest

from adapters.transfer import attempt
from adapters.transfer_remote import Permanent, download, upload


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def refused(action) -> str:
    with pytest.raises(Permanent) as error:
        attempt(action, "ingress", attempts=1)
    return str(error.value)


def test_an_ingress_from_a_closed_port_says_nothing_answers_there(tmp_path):
    reason = refused(lambda: download(f"http://127.0.0.1:{closed_port()}/data.bin", tmp_path / "d", "", len))
    assert reason == "nothing answers at that address (connection refused) (after 1 attempts)"


def test_an_egress_to_a_closed_port_says_the_same_words(tmp_path):
    (tmp_path / "out.bin").write_bytes(b"x")
    reason = refused(lambda: upload(tmp_path / "out.bin", f"http://127.0.0.1:{closed_port()}/out", "", len))
    assert reason.startswith("nothing answers at that address (connection refused)")


def test_a_host_that_does_not_resolve_is_named_so(tmp_path):
    reason = refused(lambda: download("http://no-such-host.invalid/data.bin", tmp_path / "d", "", len))
    assert reason.startswith("the host name does not resolve")


def test_the_cli_says_in_words_that_nothing_answers_at_its_api(capsys):
    from api.cli.main import main

    port = closed_port()
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("ROVING_API", f"http://127.0.0.1:{port}")
        patch.setenv("ROVING_TOKEN", "t")
        assert main(["object", "get", "object://user/x.bin", "/tmp/never-written"]) == 1
    err = capsys.readouterr().err
    assert f"cannot reach http://127.0.0.1:{port}: nothing answers there (connection refused)" in err
    assert "Errno" not in err
