"""The README and the guides point only inside the repository, cite examples that exist and parse, and link up."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from domain.fuzzfile import parse_fuzzfile
from tests.doc_blocks import GUIDES, REPO, marked_blocks

README = REPO / "README.md"
DOCUMENTS = (README, *GUIDES)
LINK = re.compile(r"\]\(([^)\s]+)\)")
CITED = re.compile(r"(?<![\w/.-])((?:examples|ops|docs)/[\w./-]*\w)")
SUBMITTED = re.compile(r"roving workflow (?:start|validate) ([\w./-]+\.ya?ml)")
EXAMPLES = sorted((REPO / "examples").glob("*.yaml"))


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces become hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(document: Path) -> set[str]:
    return {slug(line.lstrip("#")) for line in document.read_text().splitlines() if line.startswith("#")}


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda d: d.name)
def test_every_link_points_to_a_file_or_heading_inside_the_repository(document):
    for target in LINK.findall(document.read_text()):
        if target.startswith(("http://", "https://", "mailto:")):
            continue
        path, _, anchor = target.partition("#")
        linked = (document.parent / path).resolve() if path else document
        assert linked.is_relative_to(REPO), f"{document.name}: {target} leaves the repository"
        assert linked.exists(), f"{document.name}: {target} does not exist"
        if anchor and linked.suffix == ".md":
            assert anchor in anchors(linked), f"{document.name}: {target} names no heading of {linked.name}"


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda d: d.name)
def test_every_cited_example_and_ops_file_exists(document):
    text = document.read_text()
    assert "../shared" not in text
    for cited in CITED.findall(text):
        assert (REPO / cited).exists(), f"{document.name} cites {cited}, which is not in the repository"
    for submitted in SUBMITTED.findall(text):
        if not submitted.startswith("/"):  # an absolute path is a file the block writes itself
            assert (REPO / submitted).exists(), f"{document.name} submits {submitted}, which is not in the repository"


def test_the_readme_links_both_guides_and_keeps_its_two_setup_commands():
    text = README.read_text()
    assert "(docs/user-guide.md)" in text and "(docs/admin-guide.md)" in text
    quick_start = text.split("## Quick start", 1)[1].split("```sh\n", 1)[1].split("```", 1)[0]
    assert [line.split()[0:2] for line in quick_start.splitlines()] == [["make", "up"], ["make", "test"]]


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda e: e.name)
def test_every_example_parses_without_errors(example):
    assert parse_fuzzfile(example.read_text()).errors == []


def test_each_guide_has_commands_a_test_runs():
    for guide in GUIDES:
        assert len(marked_blocks(guide)) >= 5, guide.name
