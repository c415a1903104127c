"""A plain store opens without dulwich's `Repo` (store/diskopen.py), with the settings
`Repo` would give it; any other config goes through `Repo` as before."""

import pytest
from dulwich.repo import Repo

from gitsessions.store.diskopen import open_plain, plain_settings
from gitsessions.store.errors import StoreCorrupt
from gitsessions.store.repo import GitStore

SETTINGS = ("loose_compression_level", "pack_compression_level", "pack_index_version",
            "shared_perm", "loose_object_size_limit", "_use_commit_graph", "_use_midx",
            "pack_write_bitmaps", "object_format", "path", "pack_dir")  # fmt: skip


def test_a_store_opens_with_the_settings_dulwichs_repo_gives_it(tmp_path):
    path = tmp_path / "store.git"
    GitStore(path).close()
    opened = open_plain(path)
    assert opened is not None and opened.format is not None
    repo = Repo(str(path))
    for name in SETTINGS:
        assert getattr(opened.objects, name) == getattr(repo.object_store, name), name
    assert opened.objects.shared_perm is not None  # sharedRepository = 0600
    assert (
        opened.refs.path == repo.refs.path and opened.refs.worktree_path == repo.refs.worktree_path
    )
    git = GitStore(path)
    assert git._repo is None and git.objects.fsync_object_files  # no `Repo` opened
    assert git.repo.object_store is git.objects  # opened on demand, sharing the objects
    git.close()


def test_a_store_with_remotes_is_still_plain(tmp_path):
    path = tmp_path / "store.git"
    GitStore(path).close()
    with (path / "config").open("a") as config:
        config.write('[remote "origin"]\n\turl = /some/where.git\n\tfetch = +refs/*:refs/*\n')
    assert open_plain(path) is not None


@pytest.mark.parametrize(
    "extra",
    [
        "[core]\n\tcompression = 9\n",  # a setting dulwich would apply
        "[pack]\n\tindexVersion = 1\n",
        "[include]\n\tpath = other\n",
        '[gitsessions]\n\tformatVersion = "2"\n',  # quoting: dulwich's parser decides
        "[extensions]\n\tobjectformat = sha256\n",
        '[branch "main"]\n\tremote = origin\n',
    ],
)
def test_any_other_config_is_opened_by_dulwich(tmp_path, extra):
    path = tmp_path / "store.git"
    GitStore(path).close()
    with (path / "config").open("a") as config:
        config.write(extra)
    assert open_plain(path) is None


def test_the_plain_reading_keeps_each_value():
    config = (
        b"[core]\n\tbare = true\n\tsharedRepository = 0600\n[gitsessions]\n\tformatVersion = 2\n"
    )
    assert plain_settings(config) == {
        (b"core", b"bare"): b"true",
        (b"core", b"sharedrepository"): b"0600",
        (b"gitsessions", b"formatversion"): b"2",
    }
    assert plain_settings(b"[core]\n\tbare = false\n") is None
    assert plain_settings(b"[core]\n\tbare = true\n\tbare = true\n") is None
    assert plain_settings(b"[core]\n\tbare\n") == {(b"core", b"bare"): b"true"}  # as git reads it
    assert plain_settings(b"bare = true\n[core]\n") is None  # a key before any section
    assert plain_settings(b'[core]\n\tbare = "true"\n') == {(b"core", b"bare"): b"true"}
    assert plain_settings(b"[include]\n\tpath = other\n") is None
    assert plain_settings(b'[core "x"]\n\tbare = true\n') is None
    assert plain_settings(b'[remote "o"]\n\turl = "/a b"\n') == {}
    assert plain_settings(b'[remote "o"]\n\turl = /a/b.git\n') == {}


def test_a_broken_config_is_still_reported(tmp_path):
    path = tmp_path / "store.git"
    GitStore(path).close()
    (path / "config").write_bytes(b"[core\n\tbare = true\n")
    with pytest.raises(StoreCorrupt, match="cannot be read"):
        GitStore(path)
