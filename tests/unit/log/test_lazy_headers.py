"""Lazily parsed NATS headers behave exactly like nats-py's parsed dict."""

from adapters.jetstream.headers import LazyHeaders, parse_all

RAW = b"Nats-Stream: T\r\nNats-Subject: roving.t.a.x\r\nBad Key: v\r\nX:  spaced  \r\nE:\r\nX: second\r\n\r\n"


def test_one_name_is_found_without_parsing_everything():
    headers = LazyHeaders(RAW)
    assert headers["Nats-Subject"] == "roving.t.a.x"
    assert headers.get("E") == ""
    assert headers.get("Missing", "default") == "default"
    assert "Nats-Stream" in headers and "Missing" not in headers


def test_a_repeated_name_gives_the_last_value_as_nats_py_does():
    assert LazyHeaders(RAW)["X"] == "second" == parse_all(RAW)["X"]


def test_names_with_whitespace_are_skipped_as_nats_py_does():
    assert "Bad Key" not in parse_all(RAW)
    assert dict(LazyHeaders(RAW)) == parse_all(RAW)


def test_every_other_use_sees_an_ordinary_dict():
    headers = LazyHeaders(RAW)
    assert len(headers) == 4 and bool(headers)
    assert sorted(headers) == ["E", "Nats-Stream", "Nats-Subject", "X"]
    merged = {"Status": "100"}
    merged.update(LazyHeaders(b"Nats-Last-Stream: 7\r\n"))
    assert merged == {"Status": "100", "Nats-Last-Stream": "7"}


def test_setting_a_header_keeps_the_parsed_ones():
    headers = LazyHeaders(b"A: 1\r\n")
    headers["B"] = "2"
    assert headers == {"A": "1", "B": "2"}


def test_install_gives_one_client_the_lazy_parser_and_leaves_nats_py_alone():
    from nats.aio.client import Client

    from adapters.jetstream.headers import LazyHeaders, install

    ours, theirs = install(Client()), Client()
    assert isinstance(ours._parse_header_lines(b"Roving-Topic: a.b\r\n\r\n"), LazyHeaders)
    assert not isinstance(theirs._parse_header_lines(b"Roving-Topic: a.b\r\n\r\n"), LazyHeaders)
