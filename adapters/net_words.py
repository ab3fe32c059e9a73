"""A network failure in words, in one place: Python's exceptions (urllib, httpx) and the tools' text (skopeo's and
apptainer's Go errors) name connection refused, an unresolvable host, a timeout or an untrusted certificate alike.

urllib's own text is "<urlopen error [Errno 111] Connection refused>", skopeo's "pinging container registry
127.0.0.1:1: Get ...: dial tcp 127.0.0.1:1: connect: connection refused"; the reasons are read by people who did
not write the transfer or the pull.
"""

from __future__ import annotations

import socket
import ssl
import urllib.error

REFUSED = "nothing answers at that address (connection refused)"
RESET = "the server closed the connection"
UNRESOLVED = "the host name does not resolve"
TIMEOUT = "no answer in time"
UNTRUSTED = "the server's TLS certificate is not trusted"
HANDSHAKE = "the TLS handshake failed"

ERRORS: tuple[tuple[type[BaseException], str], ...] = (
    (ConnectionRefusedError, REFUSED),
    (ConnectionResetError, RESET),
    (socket.gaierror, UNRESOLVED),
    (TimeoutError, TIMEOUT),
    (ssl.SSLCertVerificationError, UNTRUSTED),
    (ssl.SSLError, HANDSHAKE),
)
# Go's net, crypto/x509 and crypto/tls texts, as skopeo and apptainer print them (lower case: compared so)
TEXTS: tuple[tuple[str, str], ...] = (
    ("connection refused", REFUSED),
    ("connection reset by peer", RESET),
    ("no such host", UNRESOLVED),
    ("temporary failure in name resolution", UNRESOLVED),
    ("server misbehaving", UNRESOLVED),
    ("i/o timeout", TIMEOUT),
    ("tls handshake timeout", TIMEOUT),
    ("context deadline exceeded", TIMEOUT),
    ("x509: certificate", UNTRUSTED),
    ("tls: failed to verify certificate", UNTRUSTED),
)


def of_error(error: BaseException) -> str | None:
    """The words for the network failure under `error` (urllib's URLError.reason, an exception's cause), if any."""
    seen: BaseException | None = error
    for _ in range(5):  # a chain is short; a cycle must not loop
        if seen is None:
            return None
        found = next((words for kind, words in ERRORS if isinstance(seen, kind)), None)
        if found is not None:
            return found
        reason = getattr(seen, "reason", None) if isinstance(seen, urllib.error.URLError) else None
        seen = reason if isinstance(reason, BaseException) else (seen.__cause__ or seen.__context__)
    return None


def of_text(text: str) -> str | None:
    """The words for the network failure a tool's message tells, if it tells one."""
    lowered = text.lower()
    return next((words for fragment, words in TEXTS if fragment in lowered), None)
