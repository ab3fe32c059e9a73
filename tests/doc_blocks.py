"""The guides' command blocks: a fenced ```sh block whose first line is `# test` is run by tests/e2e/test_docs.py."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
GUIDES = (REPO / "docs" / "user-guide.md", REPO / "docs" / "admin-guide.md")
MARKER = "# test"
FENCE = re.compile(r"^```sh\n(.*?)^```$", re.MULTILINE | re.DOTALL)


def marked_blocks(guide: Path) -> list[tuple[int, str]]:
    """(line number, script) of every marked block of `guide`, in the order a reader meets them."""
    text = guide.read_text()
    found = []
    for match in FENCE.finditer(text):
        body = match.group(1)
        if body.split("\n", 1)[0].strip() == MARKER:
            found.append((text.count("\n", 0, match.start()) + 1, body))
    return found
