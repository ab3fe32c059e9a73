"""Catalog sources for tests: folders of reference templates, and git repositories made on disk (file://)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from tests.reference import fuzzball

GIT_ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.org", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.org", "HOME": "/nonexistent", "GIT_CONFIG_NOSYSTEM": "1"}
MARKDOWN_APP = {
    "template": """version: v4
jobs:
  greet:
    image: {uri: "{{ .Image }}"}
    command: [/bin/sh, -c, "echo {{ .Greeting }}"]
    resource: {cpu: {cores: {{ .Cores }}}, memory: {size: 64MiB}}
""",
    "values": """values:
  - name: Image
    display_name: Container image
    string_value: docker://alpine:latest
    display_category: Container
  - name: Greeting
    display_name: What to say
    string_value: hello
    display_category: Job
  - name: Cores
    display_name: CPU cores
    uint_value: 1
    display_category: Resources
  - name: Token
    display_name: An optional token
    secret_value:
      reference: ""
    display_category: Secrets
""",
    "metadata": """name: Greeter
category: Examples
tags: [demo, shell]
description: |
  Says **hello** in a job. <script>document.title='pwned'</script>
  [a link](javascript:alert(1)) and [the docs](https://example.org/docs).
""",
}


def reference_folder(root: Path, *names: str) -> Path:
    """A folder holding the named reference templates with their values files."""
    root.mkdir(parents=True, exist_ok=True)
    for name in names:
        for kind in ("template", "values"):
            shutil.copy(fuzzball("catalog") / f"{name}.{kind}.yaml", root)
    return root


def write_app(root: Path, name: str, files: dict[str, str] = MARKDOWN_APP) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for kind, text in files.items():
        (root / f"{name}.{kind}.yaml").write_text(text)
    return root


def git(repo: Path, *args: str) -> str:
    import os

    done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True,
                          env={**os.environ, **GIT_ENV})
    return done.stdout


def git_repository(root: Path, *names: str) -> str:
    """A git repository (branch main) holding the named reference templates; its file:// URL."""
    reference_folder(root, *names)
    git(root, "init", "-q", "-b", "main")
    commit(root, "templates")
    return f"file://{root}"


def commit(repo: Path, message: str) -> None:
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)
