"""The facade catalog's contract (`FacadeCatalog`), run against the memory and the Postgres
adapters alike: racing inserts agree on one entry, a stale remove removes nothing, fork
counts and soft delete, producer state per run."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import pytest_asyncio

from adapters.memory.durable_streams import MemoryFacadeCatalog
from adapters.postgres import open_postgres
from adapters.postgres.durable_streams import PostgresFacadeCatalog
from application.ports.durable_streams import FacadeCatalog, FacadeEntry
from domain.producer_fencing import ProducerState
from tests.pg import pg_dsn, pg_template  # noqa: F401  (fixtures)

NOW = datetime(2026, 1, 2, 3, 4, 5, 678000, tzinfo=UTC)


@pytest_asyncio.fixture(params=["memory", "postgres"])
async def catalog(request: pytest.FixtureRequest,
                  pg_dsn: str) -> AsyncIterator[FacadeCatalog]:  # noqa: F811
    if request.param == "memory":
        yield MemoryFacadeCatalog()
        return
    adapters = await open_postgres(pg_dsn, migrate=False)
    try:
        yield PostgresFacadeCatalog(adapters.pool)
    finally:
        await adapters.close()


def entry(path: str, run_id: str, **fields: Any) -> FacadeEntry:
    return replace(FacadeEntry(path, run_id, "text/plain", None, None, NOW), **fields)


async def test_the_first_insert_of_a_path_wins(catalog: FacadeCatalog) -> None:
    first = entry("a/b", "ds-1", ttl_seconds=60)
    assert await catalog.insert("t1", first) == first
    assert await catalog.insert("t1", entry("a/b", "ds-2")) == first
    assert await catalog.find("t1", "a/b") == first
    assert await catalog.find("t2", "a/b") is None  # tenants never meet
    assert await catalog.insert("t2", entry("a/b", "ds-3")) == entry("a/b", "ds-3")


async def test_a_stale_remove_removes_nothing(catalog: FacadeCatalog) -> None:
    await catalog.insert("t1", entry("p", "ds-new"))
    await catalog.save_producer("t1", "ds-new", "writer", ProducerState(2, 7))
    assert await catalog.remove("t1", "p", "ds-old") is False
    assert await catalog.find("t1", "p") is not None
    assert await catalog.remove("t1", "p", "ds-new") is True
    assert await catalog.find("t1", "p") is None
    assert await catalog.producer("t1", "ds-new", "writer") is None


async def test_updates_are_kept(catalog: FacadeCatalog) -> None:
    expires = NOW + timedelta(days=1)
    await catalog.insert("t1", entry("s", "ds-1", expires_at=expires))
    later = NOW + timedelta(seconds=5)
    await catalog.touch("t1", "s", later)
    await catalog.set_closed_by("t1", "s", "p:0:3")
    await catalog.set_writer_seq("t1", "s", "0010")
    found = await catalog.find("t1", "s")
    assert found is not None
    assert (found.touched_at, found.closed_by, found.writer_seq, found.expires_at) == (
        later, "p:0:3", "0010", expires)


async def test_forks_are_counted_and_a_source_can_be_soft_deleted(
        catalog: FacadeCatalog) -> None:
    await catalog.insert("t1", entry("src", "ds-s"))
    for index in range(3):
        await catalog.insert("t1", entry(f"fork{index}", f"ds-f{index}", forked_from="src",
                                         fork_offset=index, fork_sub_offset=0))
    await catalog.insert("t2", entry("elsewhere", "ds-x", forked_from="src"))
    assert await catalog.forks_of("t1", "src") == 3
    await catalog.mark_deleted("t1", "src")
    source = await catalog.find("t1", "src")
    assert source is not None and source.deleted
    fork = await catalog.find("t1", "fork2")
    assert fork is not None and (fork.forked_from, fork.fork_offset) == ("src", 2)


async def test_producer_state_is_per_run_and_producer(catalog: FacadeCatalog) -> None:
    await catalog.save_producer("t1", "ds-1", "p", ProducerState(0, 0))
    await catalog.save_producer("t1", "ds-1", "p", ProducerState(1, 4))
    await catalog.save_producer("t1", "ds-2", "p", ProducerState(9, 9))
    assert await catalog.producer("t1", "ds-1", "p") == ProducerState(1, 4)
    assert await catalog.producer("t1", "ds-2", "p") == ProducerState(9, 9)
    assert await catalog.producer("t1", "ds-1", "q") is None
    assert await catalog.producer("t2", "ds-1", "p") is None


async def test_expired_entries_are_listed_in_pages_across_tenants(catalog: FacadeCatalog) -> None:
    later = NOW + timedelta(hours=1)
    await catalog.insert("t1", entry("ttl-out", "ds-1", ttl_seconds=60))
    await catalog.insert("t1", entry("ttl-touched", "ds-2", ttl_seconds=60))
    await catalog.touch("t1", "ttl-touched", later - timedelta(seconds=30))
    await catalog.insert("t1", entry("at-out", "ds-3", expires_at=later))  # expires exactly now
    await catalog.insert("t1", entry("at-later", "ds-4", expires_at=later + timedelta(days=1)))
    await catalog.insert("t1", entry("forever", "ds-5"))
    await catalog.insert("t1", entry("deleted", "ds-6", ttl_seconds=1, deleted=True))
    await catalog.insert("t2", entry("ttl-out", "ds-7", ttl_seconds=60))

    first = await catalog.expired(later, None, 2)
    second = await catalog.expired(later, (first[-1][0], first[-1][1].path), 2)
    assert [(tenant, found.path, found.run_id) for tenant, found in first + second] == [
        ("t1", "at-out", "ds-3"), ("t1", "ttl-out", "ds-1"), ("t2", "ttl-out", "ds-7")]
    assert len(second) == 1  # a short page: the pass is over
    assert await catalog.expired(NOW, None, 10) == []


async def test_producer_state_and_writer_seq_only_move_forward(catalog: FacadeCatalog) -> None:
    """Two processes serve one stream: a save that lost the race to a later one (an
    older epoch's last batch, an older Stream-Seq) must not take the state back, or a
    fenced producer would be admitted again."""
    await catalog.save_producer("t1", "ds-1", "p", ProducerState(3, 0))
    await catalog.save_producer("t1", "ds-1", "p", ProducerState(2, 41))  # the zombie, late
    assert await catalog.producer("t1", "ds-1", "p") == ProducerState(3, 0)
    await catalog.save_producer("t1", "ds-1", "p", ProducerState(3, 1))
    await catalog.save_producer("t1", "ds-1", "p", ProducerState(3, 0))
    assert await catalog.producer("t1", "ds-1", "p") == ProducerState(3, 1)

    await catalog.insert("t1", entry("s", "ds-1"))
    for late in ("0010", "0009", "00100", "\u00e9", "z"):  # byte order: "z" < "é"
        await catalog.set_writer_seq("t1", "s", late)
    found = await catalog.find("t1", "s")
    assert found is not None and found.writer_seq == "\u00e9"
