"""`roving rotate-key [DATA_DIR]`: sign new tokens with a new key; tokens signed before keep working until they expire.

A running control plane keeps signing with the key it started with until it restarts, and verifies tokens of the
new key at once (it reads the ring again when it meets a key id it does not know).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from adapters.auth.keyring import KeyFileError, rotate_key


def rotate_main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="roving rotate-key", description=__doc__)
    parser.add_argument("data_dir", nargs="?", default=os.environ.get("ROVING_DATA_DIR", ".roving"))
    args = parser.parse_args(argv)
    path = Path(args.data_dir) / "signing.key"
    if not path.exists():
        print(f"roving rotate-key: {path} does not exist (give the control plane's data directory)", file=sys.stderr)
        return 2
    try:
        ring = rotate_key(path)
    except KeyFileError as error:
        print(f"roving rotate-key: {error}", file=sys.stderr)
        return 2
    print(f"signing with key {ring.kid}; {len(ring.verifying) - 1} retired key(s) still verify")
    return 0
