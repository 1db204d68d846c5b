"""Reading a page: exclusive cursor, bounded limit, future and pruned cursors, egress pins."""

import pytest

from domain.errors import (
    CursorPruned,
    EgressDenied,
    Forbidden,
    FutureCursor,
    InvalidLimit,
)
from entrypoints.testing.simulation import simulation
from tests.application.support import ADMIN, ALICE, RUN, append_numbers, key, make_stream


async def test_a_page_holds_at_most_limit_records_above_the_cursor() -> None:
    sim = simulation()
    await make_stream(sim)
    await append_numbers(sim, 1, 6)
    result = await sim.service.reading.read(ALICE, RUN, "s", after=2, limit=3)
    assert [r.sequence for r in result.page.records] == [3, 4, 5]
    assert [r.payload for r in result.page.records] == [3, 4, 5]
    assert (result.next_cursor, result.page.head, result.page.earliest) == (5, 6, 1)
    assert result.page.closed is False


async def test_the_default_limit_is_100() -> None:
    sim = simulation()
    await make_stream(sim)
    await append_numbers(sim, 1, 150)
    result = await sim.service.reading.read(ALICE, RUN, "s", after=0)
    assert len(result.page.records) == 100


async def test_reading_at_head_returns_nothing_and_keeps_the_cursor() -> None:
    sim = simulation()
    await make_stream(sim)
    await append_numbers(sim, 1, 2)
    result = await sim.service.reading.read(ALICE, RUN, "s", after=2)
    assert (list(result.page.records), result.next_cursor) == ([], 2)


@pytest.mark.parametrize("limit", [0, -1, 1001])
async def test_a_limit_outside_1_to_1000_is_refused(limit: int) -> None:
    sim = simulation()
    await make_stream(sim)
    with pytest.raises(InvalidLimit):
        await sim.service.reading.read(ALICE, RUN, "s", after=0, limit=limit)


async def test_the_largest_limit_is_accepted() -> None:
    sim = simulation()
    await make_stream(sim, credit={"max_unread_items": 2000})
    await append_numbers(sim, 1, 1000)
    await append_numbers(sim, 1001, 1001)
    result = await sim.service.reading.read(ALICE, RUN, "s", after=0, limit=1000)
    assert result.next_cursor == 1000


async def test_a_cursor_beyond_head_is_a_future_cursor() -> None:
    sim = simulation()
    await make_stream(sim)
    await append_numbers(sim, 1, 2)
    with pytest.raises(FutureCursor):
        await sim.service.reading.read(ALICE, RUN, "s", after=3)


async def test_a_cursor_whose_successor_was_pruned_reports_where_to_resync() -> None:
    sim = simulation()
    await make_stream(sim, retention={"max_records": 3})
    await append_numbers(sim, 1, 10)
    await sim.service.retention.prune(key())
    with pytest.raises(CursorPruned) as refused:
        await sim.service.reading.read(ALICE, RUN, "s", after=2)
    assert (refused.value.requested, refused.value.earliest, refused.value.latest) == (2, 8, 10)
    assert refused.value.extra["reason"] == "resync"
    result = await sim.service.reading.read(ALICE, RUN, "s", after=7)
    assert [r.sequence for r in result.page.records] == [8, 9, 10]


async def test_content_does_not_leave_through_a_region_outside_the_egress_pins() -> None:
    sim = simulation()
    await make_stream(sim, placement={"metadata_home": "local", "client_egress_regions": ["eu"]})
    await append_numbers(sim, 1, 1)
    with pytest.raises(EgressDenied):
        await sim.service.reading.read(ALICE, RUN, "s", after=0)
    # the definition itself carries no record content
    assert (await sim.service.definitions.get(ALICE, RUN, "s")).head == 1


async def test_an_admin_manages_a_stream_but_reads_no_content_past_its_readers_pin() -> None:
    sim = simulation()
    await make_stream(sim, authorization={"readers": ["alice"], "writers": ["*"]})
    await append_numbers(sim, 1, 2)
    assert (await sim.service.definitions.get(ADMIN, RUN, "s")).head == 2
    with pytest.raises(Forbidden):
        await sim.service.reading.read(ADMIN, RUN, "s", 0)
    with pytest.raises(Forbidden):
        await sim.service.follower.open(ADMIN, RUN, "s", 0)
    assert (await sim.service.reading.read(ALICE, RUN, "s", 0)).page.head == 2
