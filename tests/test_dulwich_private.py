"""The private dulwich calls in `store/dulwich_private.py` still exist and still do what
the store relies on: fails loudly on a dulwich upgrade that changes them."""

from gitsessions.store import dulwich_private, maintenance


def test_the_private_calls_exist():
    from dulwich.object_store import DiskObjectStore

    for name in (
        "_remove_pack",
        "_iter_loose_objects",
        "_clear_cached_packs",
        "_update_pack_cache",
    ):
        assert callable(getattr(DiskObjectStore, name, None)), f"dulwich lost {name}"


def test_they_list_rescan_and_remove(store, make_session, home):
    make_session(turns=2)
    objects = store.git.repo.object_store
    loose = set(dulwich_private.loose_objects(objects))
    assert loose and all(len(sha) == 40 for sha in loose)
    maintenance.pack_loose(store.git)
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
