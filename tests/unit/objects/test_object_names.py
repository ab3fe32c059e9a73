"""Object locations as people write them: `object://user/...`, `object://group/G/...`, bare paths and folders."""

import pytest

from domain.objects.names import Location, ObjectNameError, Scope, parse_location


@pytest.mark.parametrize("text, expected", [
    ("data.csv", Location(Scope.USER, "data.csv")),
    ("runs/2026/out.bin", Location(Scope.USER, "runs/2026/out.bin")),
    ("object://user/runs/", Location(Scope.USER, "runs/")),
    ("object://user/", Location(Scope.USER, "")),
    ("object://group/ml/weights.pt", Location(Scope.GROUP, "weights.pt", "ml")),
    ("object://group/ml/", Location(Scope.GROUP, "", "ml")),
])
def test_a_location_reads_as_its_scope_group_and_name(text, expected):
    assert parse_location(text) == expected


@pytest.mark.parametrize("text, reason", [
    ("s3://bucket/key", "expected object://user/PATH"),
    ("object://cluster/x", "the scope is user or group"),
    ("object://group/ml", "expected object://group/GROUP/PATH"),
    ("object://group/-bad/x", "expected object://group/GROUP/PATH"),
    ("a//b", "an empty part"),
    ("/abs", "an empty part"),
    ("a/../b", "`..` part"),
    ("./a", "`.` part"),
    ("a\nb", "control characters"),
    ("x" * 1025, "at most 1024 bytes"),
])
def test_a_location_that_is_not_one_says_why(text, reason):
    with pytest.raises(ObjectNameError, match=reason.replace("(", r"\(").replace(".", r"\.")):
        parse_location(text)


def test_a_put_into_a_folder_takes_the_file_name():
    assert parse_location("runs/").inside("/home/alice/results/out.csv") == Location(Scope.USER, "runs/out.csv")
    assert parse_location("object://group/ml/").inside("w.pt").uri == "object://group/ml/w.pt"
    assert parse_location("exact.csv").inside("/tmp/other.csv").name == "exact.csv"


def test_an_object_name_is_not_a_folder():
    from domain.objects.names import check_name
    with pytest.raises(ObjectNameError, match="empty part"):
        check_name("runs/", folder=False)


def test_a_folder_and_a_path_without_a_file_name_cannot_make_an_object():
    with pytest.raises(ObjectNameError, match="no file name"):
        parse_location("runs/").inside("/")


def test_a_location_prints_as_its_uri():
    assert Location(Scope.GROUP, "a/b", "ml").uri == "object://group/ml/a/b"
    assert Location(Scope.USER, "").is_folder and not Location(Scope.USER, "a").is_folder
