"""Private files written by several processes at once: no writer fails, a key is made once and every process uses it."""

from __future__ import annotations

import json
import stat
import subprocess
import sys
import time
from pathlib import Path

from adapters.private_files import create_private, write_private

WRITERS = 8
# Each process waits for the same instant, then opens the ring (making it if missing) and seals a value.
OPEN_RING = """
import json, sys, time
from pathlib import Path
from adapters.secret_crypto import AesGcmCipher
start, path = float(sys.argv[1]), Path(sys.argv[2])
time.sleep(max(0.0, start - time.time()))
cipher = AesGcmCipher(path)
sealed = cipher.seal(b"value", b"ctx")
print(json.dumps({"key": sealed.key_id, "ciphertext": sealed.ciphertext}))
"""
WRITE_TOKEN = """
import sys, time
from pathlib import Path
from api.composition.bootstrap import write_secret
start, path = float(sys.argv[1]), Path(sys.argv[2])
time.sleep(max(0.0, start - time.time()))
for n in range(200):
    write_secret(path, "token-" + sys.argv[3])
"""


def at_once(script: str, *args: str, writers: int = WRITERS) -> list[subprocess.CompletedProcess]:
    start = str(time.time() + 1.5)  # every interpreter is up by then
    procs = [subprocess.Popen([sys.executable, "-c", script, start, *args, str(n)], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for n in range(writers)]
    done = []
    for proc in procs:
        out, err = proc.communicate(timeout=60)
        done.append(subprocess.CompletedProcess(proc.args, proc.returncode, out, err))
    return done


def test_api_workers_making_the_secrets_key_ring_at_once_all_start_and_share_one_key(tmp_path):
    from adapters.secret_crypto import AesGcmCipher
    from domain.secrets import Sealed

    for round_ in range(3):
        ring = tmp_path / f"round{round_}" / "secrets.keyring"
        ring.parent.mkdir()
        results = at_once(OPEN_RING, str(ring))
        assert [r.stderr for r in results if r.returncode] == []
        sealed = [json.loads(r.stdout) for r in results]
        assert len({s["key"] for s in sealed}) == 1, "each worker made its own key"
        cipher = AesGcmCipher(ring)  # what every worker sealed opens with the ring the file holds
        assert all(cipher.open(Sealed(key_id=s["key"], ciphertext=s["ciphertext"]), b"ctx") == b"value" for s in sealed)
        assert [p.name for p in ring.parent.iterdir()] == ["secrets.keyring"], "a temporary file was left behind"


def test_processes_replacing_one_private_file_at_once_never_fail(tmp_path):
    token = tmp_path / "admin.token"
    results = at_once(WRITE_TOKEN, str(token), writers=4)
    assert [r.stderr for r in results if r.returncode] == []
    assert token.read_text().startswith("token-") and stat.S_IMODE(token.stat().st_mode) == 0o600
    assert [p.name for p in tmp_path.iterdir()] == ["admin.token"]


def test_a_private_file_is_owner_only_even_under_a_permissive_umask(tmp_path):
    import os

    old = os.umask(0)
    try:
        write_private(tmp_path / "a", "x")
        assert create_private(tmp_path / "b", b"y")
    finally:
        os.umask(old)
    assert {stat.S_IMODE(p.stat().st_mode) for p in (tmp_path / "a", tmp_path / "b")} == {0o600}


def test_create_private_never_replaces_what_the_first_writer_made(tmp_path):
    path = tmp_path / "signing.key"
    assert create_private(path, b"first") is True
    assert create_private(path, b"second") is False
    assert path.read_bytes() == b"first"
    assert sorted(p.name for p in Path(tmp_path).iterdir()) == ["signing.key"]
