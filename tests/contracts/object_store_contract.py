"""The object store contract: what every ObjectStore adapter must do, written once.

Subclasses provide a fixture `object_store`; `region` names a configured region
("local" unless a subclass overrides the fixture). Keys are unique per test.
"""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterator
from uuid import uuid4

import pytest

from application.ports.objects import ObjectEvidence, ObjectStore
from domain.errors import DigestMismatch, SizeMismatch

BODY = b"0123456789abcdef" * 10_000  # 160 000 bytes: several chunks anywhere


def digest(body: bytes) -> str:
    return hashlib.sha256(body).hexdigest()


async def chunked(body: bytes, size: int = 65536) -> AsyncIterator[bytes]:
    for start in range(0, len(body), size):
        yield body[start:start + size]


def new_object_key() -> str:
    return f"tenant/run/stream/{uuid4()}"


async def read_all(store: ObjectStore, region: str, key: str) -> bytes:
    return b"".join([chunk async for chunk in store.open(region, key)])


class ObjectStoreContract:
    @pytest.fixture
    def region(self) -> str:
        return "local"

    async def test_a_body_is_put_stated_opened_and_deleted(
            self, object_store: ObjectStore, region: str) -> None:
        key = new_object_key()
        evidence = await object_store.put(region, key, chunked(BODY), len(BODY), digest(BODY))
        assert evidence == ObjectEvidence(len(BODY), digest(BODY))
        assert await object_store.stat(region, key) == ObjectEvidence(len(BODY), digest(BODY))
        assert await read_all(object_store, region, key) == BODY
        await object_store.delete(region, key)
        assert await object_store.stat(region, key) is None

    async def test_an_empty_body_is_a_body(self, object_store: ObjectStore, region: str) -> None:
        key = new_object_key()
        await object_store.put(region, key, chunked(b""), 0, digest(b""))
        assert await object_store.stat(region, key) == ObjectEvidence(0, digest(b""))
        assert await read_all(object_store, region, key) == b""

    async def test_a_stat_of_an_absent_body_is_none(
            self, object_store: ObjectStore, region: str) -> None:
        assert await object_store.stat(region, new_object_key()) is None

    async def test_a_shorter_body_than_declared_keeps_nothing(
            self, object_store: ObjectStore, region: str) -> None:
        key = new_object_key()
        with pytest.raises(SizeMismatch):
            await object_store.put(region, key, chunked(BODY[:-1]), len(BODY), digest(BODY))
        assert await object_store.stat(region, key) is None

    async def test_a_longer_body_than_declared_is_refused_and_keeps_nothing(
            self, object_store: ObjectStore, region: str) -> None:
        key = new_object_key()
        with pytest.raises(SizeMismatch):
            await object_store.put(region, key, chunked(BODY + b"!"), len(BODY), digest(BODY))
        assert await object_store.stat(region, key) is None

    async def test_a_body_with_another_digest_keeps_nothing(
            self, object_store: ObjectStore, region: str) -> None:
        key = new_object_key()
        tampered = BODY[:-1] + b"?"
        with pytest.raises(DigestMismatch):
            await object_store.put(region, key, chunked(tampered), len(BODY), digest(BODY))
        assert await object_store.stat(region, key) is None

    async def test_a_refused_body_leaves_an_earlier_good_one_in_place(
            self, object_store: ObjectStore, region: str) -> None:
        key = new_object_key()
        await object_store.put(region, key, chunked(BODY), len(BODY), digest(BODY))
        with pytest.raises(DigestMismatch):
            await object_store.put(region, key, chunked(BODY[::-1]), len(BODY), digest(BODY))
        assert await read_all(object_store, region, key) == BODY

    async def test_deleting_an_absent_body_is_fine(
            self, object_store: ObjectStore, region: str) -> None:
        await object_store.delete(region, new_object_key())

    async def test_an_unconfigured_region_is_refused(
            self, object_store: ObjectStore, region: str) -> None:
        elsewhere = f"nowhere-{uuid4().hex[:8]}"
        assert object_store.serves(region) and not object_store.serves(elsewhere)
        with pytest.raises(LookupError):
            await object_store.put(elsewhere, new_object_key(), chunked(b"x"), 1, digest(b"x"))
        with pytest.raises(LookupError):
            await object_store.stat(elsewhere, new_object_key())

    async def test_list_objects_lists_complete_bodies_under_a_prefix(
            self, object_store: ObjectStore, region: str) -> None:
        prefix = f"tenant-{uuid4().hex[:8]}/run/"
        kept = [f"{prefix}a/{uuid4()}", f"{prefix}b/{uuid4()}"]
        for key in kept:
            await object_store.put(region, key, chunked(b"body"), 4, digest(b"body"))
        with pytest.raises(DigestMismatch):
            await object_store.put(region, f"{prefix}c/{uuid4()}", chunked(b"evil"), 4,
                                   digest(b"body"))
        elsewhere = f"other-{uuid4().hex[:8]}/run/s/{uuid4()}"
        await object_store.put(region, elsewhere, chunked(b"x"), 1, digest(b"x"))
        listed = [entry async for entry in object_store.list_objects(region, prefix)]
        assert sorted(entry.key for entry in listed) == sorted(kept)
        assert all(entry.modified_at.tzinfo is not None for entry in listed)
        await object_store.delete(region, kept[0])
        after = [entry.key async for entry in object_store.list_objects(region, prefix)]
        assert after == [kept[1]]
        everything = {entry.key async for entry in object_store.list_objects(region)}
        assert {kept[1], elsewhere} <= everything
        with pytest.raises(LookupError):
            _ = [entry async for entry in object_store.list_objects(f"nowhere-{uuid4().hex}")]
