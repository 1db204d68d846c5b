"""The filesystem object store: crash-safe publishing, keys confined to the root,
the on-disk layout, and the digest measured at `stat`."""

from __future__ import annotations

import hashlib
import os
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from adapters.fs import FilesystemObjectStore, UnsafeObjectKey
from domain.errors import DigestMismatch
from tests.contracts.object_store_contract import ObjectStoreContract

KEY = "tenant-a/run-1/stream-1/3f0c0b8e-0d7e-4a43-9a55-0f2a4f9c1d10"


async def chunks_of(data: bytes, size: int = 4096) -> AsyncIterator[bytes]:
    for start in range(0, len(data), size):
        yield data[start:start + size]


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def files_under(directory: Path) -> list[Path]:
    return sorted(path for path in directory.rglob("*") if path.is_file())


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return tmp_path / "objects"


@pytest.fixture
def fs_store(root: Path) -> FilesystemObjectStore:
    return FilesystemObjectStore(root, regions=("eu", "us"))


class TestFilesystemObjects(ObjectStoreContract):
    @pytest.fixture
    def object_store(self, tmp_path: Path) -> FilesystemObjectStore:
        return FilesystemObjectStore(tmp_path / "objects", regions=("local",))


async def test_body_lives_at_root_region_key(fs_store: FilesystemObjectStore,
                                             root: Path) -> None:
    data = b"large result" * 1000
    await fs_store.put("eu", KEY, chunks_of(data), len(data), sha(data))

    assert fs_store.path_for("eu", KEY) == root / "eu" / KEY
    assert (root / "eu" / KEY).read_bytes() == data
    assert files_under(root) == [root / "eu" / KEY]


async def test_no_partial_body_is_visible_under_the_final_name_while_writing(
        fs_store: FilesystemObjectStore) -> None:
    data = bytes(range(256)) * 64
    final = fs_store.path_for("eu", KEY)
    seen_during_write: list[bool] = []

    async def watched_body() -> AsyncIterator[bytes]:
        async for chunk in chunks_of(data, 1024):
            yield chunk
            seen_during_write.append(final.exists())

    await fs_store.put("eu", KEY, watched_body(), len(data), sha(data))

    assert seen_during_write and not any(seen_during_write)
    assert final.read_bytes() == data


async def test_a_body_that_fails_midway_leaves_no_file_at_all(
        fs_store: FilesystemObjectStore, root: Path) -> None:
    data = b"x" * 100_000

    async def broken_body() -> AsyncIterator[bytes]:
        yield data[:40_000]
        raise ConnectionResetError("client went away")

    with pytest.raises(ConnectionResetError):
        await fs_store.put("eu", KEY, broken_body(), len(data), sha(data))

    assert not fs_store.path_for("eu", KEY).exists()
    assert files_under(root) == []


async def test_a_refused_overwrite_keeps_the_previous_body(
        fs_store: FilesystemObjectStore, root: Path) -> None:
    first = b"first version"
    await fs_store.put("eu", KEY, chunks_of(first), len(first), sha(first))
    second = b"other version"

    with pytest.raises(DigestMismatch):
        await fs_store.put("eu", KEY, chunks_of(second), len(second), sha(b"not it"))

    assert (await fs_store.stat("eu", KEY)) is not None
    assert fs_store.path_for("eu", KEY).read_bytes() == first
    assert files_under(root) == [fs_store.path_for("eu", KEY)]


async def test_the_file_is_fsynced_before_the_rename_and_the_directory_after(
        fs_store: FilesystemObjectStore, monkeypatch: pytest.MonkeyPatch) -> None:
    events: list[tuple[str, int]] = []
    real_fsync, real_replace = os.fsync, os.replace

    def recording_fsync(descriptor: int) -> None:
        events.append(("fsync", os.fstat(descriptor).st_ino))
        real_fsync(descriptor)

    def recording_replace(source: str | os.PathLike[str],
                          target: str | os.PathLike[str]) -> None:
        events.append(("replace", os.stat(source).st_ino))
        real_replace(source, target)

    monkeypatch.setattr(os, "fsync", recording_fsync)
    monkeypatch.setattr(os, "replace", recording_replace)
    data = b"durable" * 100

    await fs_store.put("eu", KEY, chunks_of(data), len(data), sha(data))

    final = fs_store.path_for("eu", KEY)
    body_inode, directory_inode = final.stat().st_ino, final.parent.stat().st_ino
    replaced = events.index(("replace", body_inode))
    assert ("fsync", body_inode) in events[:replaced]
    assert ("fsync", directory_inode) in events[replaced + 1:]


@pytest.mark.parametrize("key", [
    "../outside",
    "tenant/../../outside",
    "tenant/run/../../../outside",
    "/etc/passwd",
    "tenant//stream",
    "./tenant",
    "tenant/.",
    "tenant/..",
    "",
    "tenant\\..\\..\\outside",
    "tenant/\x00/x",
])
async def test_keys_that_could_escape_the_root_are_refused(
        fs_store: FilesystemObjectStore, tmp_path: Path, key: str) -> None:
    data = b"payload"

    with pytest.raises(UnsafeObjectKey):
        await fs_store.put("eu", key, chunks_of(data), len(data), sha(data))
    with pytest.raises(UnsafeObjectKey):
        await fs_store.stat("eu", key)
    with pytest.raises(UnsafeObjectKey):
        await fs_store.delete("eu", key)
    with pytest.raises(UnsafeObjectKey):
        await anext(aiter(fs_store.open("eu", key)))
    assert files_under(tmp_path) == []


@pytest.mark.parametrize("region", ["..", ".", "eu/..", "/tmp", ""])
async def test_region_names_that_could_escape_the_root_are_refused(
        root: Path, tmp_path: Path, region: str) -> None:
    store = FilesystemObjectStore(root)
    data = b"payload"

    with pytest.raises(UnsafeObjectKey):
        await store.put(region, KEY, chunks_of(data), len(data), sha(data))
    assert files_under(tmp_path) == []


def test_a_configured_region_must_be_one_safe_segment(root: Path) -> None:
    with pytest.raises(UnsafeObjectKey):
        FilesystemObjectStore(root, regions=("eu", "../elsewhere"))


async def test_without_a_region_list_each_region_gets_its_own_directory(root: Path) -> None:
    store = FilesystemObjectStore(root)
    data = b"anywhere"
    await store.put("ap-south", KEY, chunks_of(data), len(data), sha(data))

    assert (root / "ap-south" / KEY).read_bytes() == data
    assert await store.stat("eu", KEY) is None


async def test_stat_measures_what_is_on_disk(fs_store: FilesystemObjectStore) -> None:
    data = b"original body"
    await fs_store.put("eu", KEY, chunks_of(data), len(data), sha(data))
    damaged = b"damaged body!"
    fs_store.path_for("eu", KEY).write_bytes(damaged)

    evidence = await fs_store.stat("eu", KEY)

    assert evidence is not None
    assert (evidence.size, evidence.sha256) == (len(damaged), sha(damaged))


async def test_opening_an_absent_body_is_file_not_found(
        fs_store: FilesystemObjectStore) -> None:
    with pytest.raises(FileNotFoundError):
        await anext(aiter(fs_store.open("eu", KEY)))


async def test_a_key_that_names_a_directory_has_no_body(
        fs_store: FilesystemObjectStore) -> None:
    data = b"nested"
    await fs_store.put("eu", KEY, chunks_of(data), len(data), sha(data))
    prefix = KEY.rsplit("/", 1)[0]

    assert await fs_store.stat("eu", prefix) is None
    with pytest.raises(FileNotFoundError):
        await anext(aiter(fs_store.open("eu", prefix)))
    await fs_store.delete("eu", prefix)
    assert await fs_store.stat("eu", KEY) is not None


@pytest.mark.parametrize("umask", [0o000, 0o022, 0o277])
async def test_bodies_are_0600_and_created_directories_0700_whatever_the_umask(
        fs_store: FilesystemObjectStore, root: Path, umask: int) -> None:
    data = b"private result"
    previous = os.umask(umask)
    try:
        await fs_store.put("eu", KEY, chunks_of(data), len(data), sha(data))
    finally:
        os.umask(previous)
    body = root / "eu" / KEY
    assert body.stat().st_mode & 0o777 == 0o600
    directory = body.parent
    while directory != root.parent:  # every directory the store created, root included
        assert directory.stat().st_mode & 0o777 == 0o700, directory
        directory = directory.parent
    assert body.read_bytes() == data
