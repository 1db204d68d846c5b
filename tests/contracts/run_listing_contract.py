"""The runs listing (`StreamStore.list_runs`, ADR 0046): one tenant's runs, never another's,
keyset-paged in Python's string order, erased runs left out, deleted and expired streams
neither counted nor keeping a run listed; and a model walk: random creates, stream
deletions and run erasures over two tenants, each followed by paging both tenants'
listings with random limits, must answer exactly what a plain model (a set of stream keys)
says."""

from __future__ import annotations

import random
from collections.abc import Sequence
from datetime import datetime, timedelta
from uuid import uuid4

from application.ports.streams import RunSummary
from domain.identifiers import RunKey, StreamKey
from tests.contracts.harness import StorageHarness
from tests.contracts.storage_support import NOW, created


def _tenant() -> str:
    return f"tenant-{uuid4().hex[:12]}"


async def _runs(harness: StorageHarness, tenant: str, after: str | None, limit: int,
                now: datetime = NOW, reader: str | None = None) -> Sequence[RunSummary]:
    """The listing as an admin sees it, unless `reader` names the subject it is for."""
    return await harness.store.list_runs(tenant, after, limit, now, reader)


async def _deleted(harness: StorageHarness, key: StreamKey) -> None:
    async with harness.store.lock(key) as session:
        assert session.stream.delete()


class RunListingContract:
    async def test_list_runs_never_shows_another_tenants_runs(
            self, harness: StorageHarness) -> None:
        ours, theirs = _tenant(), _tenant()
        await created(harness, RunKey(ours, "shared-name").stream("a"))
        await created(harness, RunKey(theirs, "shared-name").stream("b"))
        await created(harness, RunKey(theirs, "their-only").stream("c"))
        listed = await _runs(harness, ours, None, 100)
        assert [(run.run_id, run.streams) for run in listed] == [("shared-name", 1)]
        for after in (None, "", "a", "shared-name"):
            page = await _runs(harness, ours, after, 100)
            assert all(run.run_id != "their-only" for run in page)
        assert list(await _runs(harness, _tenant(), None, 100)) == []

    async def test_list_runs_pages_in_run_id_order_with_stream_counts(
            self, harness: StorageHarness) -> None:
        tenant = _tenant()
        names = ["b", "a.1", "A", "c", "a"]
        for index, name in enumerate(names):
            for stream in range(index + 1):
                await created(harness, RunKey(tenant, name).stream(f"s{stream}"))
        ordered = sorted(names)  # Python's (code point) order: "A" < "a" < "a.1"
        listed = await _runs(harness, tenant, None, 100)
        assert [run.run_id for run in listed] == ordered
        assert {run.run_id: run.streams for run in listed} == {
            name: index + 1 for index, name in enumerate(names)}
        assert all(run.created_at == NOW for run in listed)

        async def ids(after: str | None, limit: int) -> list[str]:
            return [r.run_id for r in await _runs(harness, tenant, after, limit)]

        assert await ids(None, 2) == ordered[:2]
        assert await ids("a", 2) == ["a.1", "b"]
        assert await ids("b", 10) == ["c"]
        assert list(await _runs(harness, tenant, "c", 10)) == []
        assert list(await _runs(harness, tenant, None, 0)) == []

    async def test_list_runs_leaves_out_erased_runs_before_the_limit(
            self, harness: StorageHarness) -> None:
        tenant = _tenant()
        for name in ("r1", "r2", "r3"):
            await created(harness, RunKey(tenant, name).stream("s"))
        await harness.store.mark_run_erased(RunKey(tenant, "r1"))
        await harness.store.mark_run_erased(RunKey(tenant, "r2"))
        assert [r.run_id for r in await _runs(harness, tenant, None, 1)] == ["r3"]
        assert [r.run_id for r in await _runs(harness, tenant, None, 10)] == ["r3"]

    async def test_list_runs_neither_counts_nor_lists_deleted_or_expired_streams(
            self, harness: StorageHarness) -> None:
        tenant = _tenant()
        await created(harness, RunKey(tenant, "mixed").stream("kept"))
        await created(harness, RunKey(tenant, "mixed").stream("gone"))
        await created(harness, RunKey(tenant, "mixed").stream("brief"), expires_after_seconds=60)
        await created(harness, RunKey(tenant, "only-gone").stream("s"))
        await created(harness, RunKey(tenant, "only-brief").stream("s"), expires_after_seconds=60)
        await created(harness, RunKey(tenant, "z-last").stream("s"))
        await _deleted(harness, RunKey(tenant, "mixed").stream("gone"))
        await _deleted(harness, RunKey(tenant, "only-gone").stream("s"))

        def counts(page: object) -> list[tuple[str, int]]:
            return [(run.run_id, run.streams) for run in page]  # type: ignore[attr-defined]

        assert counts(await _runs(harness, tenant, None, 10)) == [
            ("mixed", 2), ("only-brief", 1), ("z-last", 1)]
        later = NOW + timedelta(seconds=60)  # the expiry itself: gone from then on
        assert counts(await _runs(harness, tenant, None, 10, later)) == [
            ("mixed", 1), ("z-last", 1)]
        # The limit counts listed runs only: a run of gone streams takes no place.
        assert counts(await _runs(harness, tenant, None, 1, later)) == [("mixed", 1)]
        assert counts(await _runs(harness, tenant, "mixed", 1, later)) == [
            ("z-last", 1)]

    async def test_list_runs_counts_only_streams_whose_readers_pin_names_the_reader(
            self, harness: StorageHarness) -> None:
        tenant = _tenant()
        await created(harness, RunKey(tenant, "mixed").stream("open"))
        await created(harness, RunKey(tenant, "mixed").stream("bobs"),
                      authorization={"readers": ["bob"]})
        await created(harness, RunKey(tenant, "mixed").stream("shared"),
                      authorization={"readers": ["carol", "alice"]})
        await created(harness, RunKey(tenant, "only-bobs").stream("s"),
                      authorization={"readers": ["bob"], "writers": ["bob"]})

        async def counts(reader: str | None, limit: int = 10) -> list[tuple[str, int]]:
            page = await _runs(harness, tenant, None, limit, reader=reader)
            return [(run.run_id, run.streams) for run in page]

        assert await counts("alice") == [("mixed", 2)]
        assert await counts("bob") == [("mixed", 2), ("only-bobs", 1)]
        assert await counts("mallory") == [("mixed", 1)]
        assert await counts("*") == [("mixed", 1)]  # a subject named `*` is no wildcard
        assert await counts(None) == [("mixed", 3), ("only-bobs", 1)]  # an admin's view
        # A run hidden from the reader takes no place in its page either.
        assert await counts("alice", 1) == [("mixed", 2)]

    async def test_list_runs_pages_exactly_as_the_model_says(
            self, harness: StorageHarness) -> None:
        for seed in range(3):
            chooser = random.Random(seed)
            tenants = (_tenant(), _tenant())
            runs = ["r", "r.1", "R", "r-2", "s", "a:b"]
            streams: set[tuple[str, str, str]] = set()
            erased: set[tuple[str, str]] = set()
            deleted: set[tuple[str, str, str]] = set()
            for _ in range(25):
                tenant, run = chooser.choice(tenants), chooser.choice(runs)
                roll = chooser.random()
                if roll < 0.15:
                    await harness.store.mark_run_erased(RunKey(tenant, run))
                    erased.add((tenant, run))
                elif roll < 0.3 and (live := sorted(
                        key for key in streams - deleted if key[:2] == (tenant, run))) \
                        and (tenant, run) not in erased:
                    gone = chooser.choice(live)
                    await _deleted(harness, RunKey(tenant, run).stream(gone[2]))
                    deleted.add(gone)
                elif (tenant, run) not in erased:
                    stream = chooser.choice(["a", "b", "c"])
                    await created(harness, RunKey(tenant, run).stream(stream))
                    streams.add((tenant, run, stream))
                for listed_tenant in tenants:
                    expected = {}
                    for t, r, _stream in sorted(streams - deleted):
                        if t == listed_tenant and (t, r) not in erased:
                            expected[r] = expected.get(r, 0) + 1
                    assert await _paged(harness, listed_tenant, chooser.randint(1, 4)) == \
                        sorted(expected.items())


async def _paged(harness: StorageHarness, tenant: str, limit: int) -> list[tuple[str, int]]:
    """Every page of `tenant`'s listing, each page strictly after the last run of the one
    before (keyset), none longer than `limit`."""
    found: list[tuple[str, int]] = []
    after: str | None = None
    while True:
        page = await _runs(harness, tenant, after, limit)
        assert len(page) <= limit
        found.extend((run.run_id, run.streams) for run in page)
        if len(page) < limit:
            return found
        after = page[-1].run_id
