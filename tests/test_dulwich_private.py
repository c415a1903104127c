"""The private dulwich calls in `store/dulwich_private.py` still exist and still do what
the store relies on: fails loudly on a dulwich upgrade that changes them."""

from gitsessions.store import dulwich_private, maintenance
from tests.conftest import loosen


def test_the_private_calls_exist():
    from dulwich.object_store import DiskObjectStore

    for name in (
        "_remove_pack",
        "_iter_loose_objects",
        "_clear_cached_packs",
        "_update_pack_cache",
        "_iter_cached_packs",
    ):
        assert callable(getattr(DiskObjectStore, name, None)), f"dulwich lost {name}"
    from dulwich.pack import PackData

    assert callable(getattr(PackData, "_buffer", None)), "dulwich lost PackData._buffer"


def test_they_list_rescan_and_remove(store, make_session, home):
    make_session(turns=2)
    loosen(home / "store.git")  # a commit writes a pack: all of them loose, no pack
    objects = store.git.repo.object_store
    dulwich_private.rescan_packs(objects)
    loose = set(dulwich_private.loose_objects(objects))
    assert loose and all(len(sha) == 40 for sha in loose)
    maintenance.merge_packs(store.git)
    dulwich_private.rescan_packs(objects)
    (pack,) = objects.packs
    assert set(pack) >= loose
    assert not set(dulwich_private.loose_objects(objects))
    maintenance.repack(store.git)  # writes a new pack and removes the old one with remove_pack
    dulwich_private.rescan_packs(objects)
    (new,) = objects.packs
    assert (
        not (home / "store.git" / "objects" / "pack" / f"pack-{pack.name().decode()}.pack").exists()
        or new.name() == pack.name()
    )


def test_they_list_the_open_packs_and_map_their_bytes(store, make_session, home):
    make_session(turns=1)
    loosen(home / "store.git")
    maintenance.merge_packs(store.git)
    objects = store.git.objects
    dulwich_private.rescan_packs(objects)
    (pack,) = dulwich_private.cached_packs(objects)
    contents = dulwich_private.pack_contents(pack)
    assert contents[:4] == b"PACK"
    assert contents[-20:] == pack.data.get_stored_checksum()


def test_dulwich_inflates_a_record_no_further_than_its_header_says(tmp_path):
    """What store/packrecords.py relies on (it bounds the declared size, dulwich the
    inflating): a record declaring 10 bytes whose zlib data holds 100,000 is refused."""
    import hashlib
    import zlib

    from dulwich.repo import Repo

    from tests.test_damaged_packs import BLOB, write_pack

    repo = Repo.init_bare(str(tmp_path / "r.git"), mkdir=True)
    sha = hashlib.sha1(b"x").digest()
    write_pack(tmp_path / "r.git" / "objects" / "pack",
               [(sha, BLOB, None, b"", 10, zlib.compress(b"y" * 100_000))])  # fmt: skip
    try:
        repo.object_store.get_raw(sha.hex().encode())
    except zlib.error:
        pass
    else:
        raise AssertionError("dulwich inflated past the declared size")
    finally:
        repo.close()
