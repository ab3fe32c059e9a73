"""The builder's own steps on a directory: files written without following a base image's symlinks, and a tar
that is the same bytes for the same tree (so the same recipe always stores the same image)."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from adapters.build_plan import build_argv
from adapters.image_build import BuildFailed, pack, places, recipe_key, write_files
from adapters.object_cache import Entry
from adapters.runspec import SpecError, local_spec


def tree(root: Path) -> Path:
    (root / "bin").mkdir(parents=True)
    (root / "bin" / "tool").write_text("#!/bin/sh\n")
    os.symlink("tool", root / "bin" / "alias")
    return root


def test_files_land_at_their_paths_with_their_modes(tmp_path):
    rootfs = tree(tmp_path / "rootfs")
    write_files(rootfs, {"/opt/app/run.sh": "echo hi", "/etc/motd": "hello"}, {"/opt/app/run.sh": 0o755}, "tools")
    assert (rootfs / "opt/app/run.sh").read_text() == "echo hi"
    assert (rootfs / "opt/app/run.sh").stat().st_mode & 0o777 == 0o755
    assert (rootfs / "etc/motd").stat().st_mode & 0o777 == 0o644


def test_a_file_under_a_symlink_of_the_base_is_refused_naming_it(tmp_path):
    rootfs = tree(tmp_path / "rootfs")
    outside = tmp_path / "host-etc"
    outside.mkdir()
    os.symlink(str(outside), rootfs / "etc")
    with pytest.raises(BuildFailed, match=r"image tools: files: /etc is a symlink in the base image"):
        write_files(rootfs, {"/etc/passwd": "root::0:0"}, {}, "tools")
    assert list(outside.iterdir()) == []


def test_the_same_tree_packs_to_the_same_bytes_whatever_its_times(tmp_path):
    first, second = tree(tmp_path / "a"), tree(tmp_path / "b")
    os.utime(second / "bin" / "tool", (1, 1))
    pack(first, tmp_path / "a.tar")
    pack(second, tmp_path / "b.tar")
    digest = [hashlib.sha256((tmp_path / name).read_bytes()).hexdigest() for name in ("a.tar", "b.tar")]
    assert digest[0] == digest[1]


def test_a_new_base_digest_is_a_new_recipe():
    assert recipe_key("plan", "base-1") != recipe_key("plan", "base-2")
    assert recipe_key("plan", "base-1") == recipe_key("plan", "base-1")


def test_a_group_image_is_named_for_its_owner_and_its_group():
    assert places({"name": "tools", "scope": "group"}, "u1", "g1") == ["ref/user/u1/tools", "ref/group/g1/tools"]
    assert places({"name": "tools", "scope": "user"}, "u1", "g1") == ["ref/user/u1/tools"]


def test_a_build_past_its_ttl_is_expired_and_one_without_a_ttl_never_is():
    entry = Entry("k", "image/k-100", built=100.0, owner="u1", scope="user", ttl_seconds=60)
    assert not entry.expired(now=159) and entry.expired(now=161)
    assert not Entry("k", "image/k-100", 100.0, "u1", "user").expired(now=10**9)
    assert Entry.of(entry.text()) == entry


def test_a_node_without_the_oci_runtime_refuses_a_build_saying_what_it_needs(tmp_path):
    build = local_spec(allocation_id="a", epoch=1, workflow_id="w", stage="build:tools", kind="build",
                    build={"name": "tools", "source": "docker://debian:12"})
    with pytest.raises(SpecError, match=r"build:tools: image builds need the oci runtime on the node"):
        build_argv(build, tmp_path, None, tmp_path / "reason")
