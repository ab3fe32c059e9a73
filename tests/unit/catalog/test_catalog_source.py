"""A catalog source records where a tenant's templates come from; its name is unique within its owner and comes back
after removal, and what it may point at is checked field by field."""

from datetime import UTC, datetime

import pytest

from domain.catalog import CatalogError
from domain.catalog.source import CatalogSource, SourceKind, SourceScope, check_source, source_id

T0, T1 = datetime(2026, 1, 1, tzinfo=UTC), datetime(2026, 1, 2, tzinfo=UTC)


def added(name="apps", location="/srv/catalog") -> CatalogSource:
    return CatalogSource.add(name, SourceKind.FOLDER, location, "", SourceScope.GROUP, "g1", "lab", "o1", by="olga",
                             at=T0)


def test_a_source_id_is_its_scope_owner_and_name():
    assert added().id == source_id(SourceScope.GROUP, "g1", "apps") != source_id(SourceScope.GROUP, "g2", "apps")


def test_a_name_taken_in_its_owner_is_refused_until_the_source_is_removed():
    source = added()
    with pytest.raises(CatalogError, match="already exists; remove it first"):
        source.add_again(SourceKind.GIT, "https://git.example.org/c.git", "main", by="olga", at=T1)
    source.remove(by="olga", at=T1)
    source.add_again(SourceKind.GIT, "https://git.example.org/c.git", "main", by="olga", at=T1)
    assert (source.removed, source.kind, source.ref, source.added_at) == (False, SourceKind.GIT, "main", T1)


def test_the_history_replays_to_the_same_source():
    source = added()
    source.remove(by="olga", at=T1)
    replayed = None
    for event in source.collect_events():
        replayed = event.mutate(replayed)
    assert replayed.removed and replayed.name == "apps" and replayed.owner_name == "lab"


@pytest.mark.parametrize("name, kind, location, ref, field", [
    ("Apps", "folder", "/srv", "", "name"),
    ("apps", "svn", "/srv", "", "kind"),
    ("apps", "folder", "srv/catalog", "", "location"),
    ("apps", "git", "/srv/catalog", "", "location"),
    ("apps", "git", "ext::sh -c touch% /tmp/x", "", "location"),
    ("apps", "git", "https://tok@git.example.org/c.git", "", "location"),
    ("apps", "git", "https://git.example.org/c.git", "--upload-pack=x", "ref"),
    ("apps", "folder", "/srv", "main", "ref"),
])
def test_a_bad_source_is_refused_at_its_field(name, kind, location, ref, field):
    with pytest.raises(CatalogError) as refused:
        check_source(name, kind, location, ref)
    assert [p.path for p in refused.value.problems] == [field]


def test_scp_like_and_ssh_user_locations_are_repositories():
    assert check_source("a", "git", "git@git.example.org:lab/catalog.git", "v1.2") is SourceKind.GIT
    assert check_source("a", "git", "ssh://git@git.example.org/lab/catalog.git", "") is SourceKind.GIT
