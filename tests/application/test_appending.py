"""Appending: one transaction per batch, idempotency receipts, redaction, credit, closed streams."""

import base64
from typing import Any

import pytest

from domain.errors import Backpressure, QuotaExhausted, StreamClosed, TooLarge
from domain.records import INLINE_MAX_BYTES
from entrypoints.testing.simulation import Simulation, simulation
from tests.application.support import ALICE, RUN, append_numbers, key, make_stream


async def stored_payloads(sim: Simulation, stream_id: str = "s") -> list[Any]:
    page = await sim.ports.store.read_page(key(stream_id), 0, 1000)
    return [record.payload if record.has_payload else record.data for record in page.records]


async def test_a_batch_gets_consecutive_sequences_from_head_plus_one() -> None:
    sim = simulation()
    await make_stream(sim)
    assert await append_numbers(sim, 1, 2) == (1, 2)
    result = await sim.service.appender.append(ALICE, RUN, "s", [
        {"payload": {"n": 3}},
        {"data": base64.b64encode(b"\x00\x01").decode(), "content_type": "application/x-raw"},
    ])
    assert (result.sequences, result.head, result.stored) == ((3, 4), 4, 2)
    page = await sim.ports.store.read_page(key(), 2, 10)
    assert [(r.sequence, r.content_type) for r in page.records] == [
        (3, "application/json"), (4, "application/x-raw")]
    assert page.records[1].data == b"\x00\x01"


async def test_idempotency_keys_return_their_original_sequence_across_batches() -> None:
    sim = simulation()
    await make_stream(sim)
    first = await sim.service.appender.append(ALICE, RUN, "s", [
        {"payload": "a", "idempotency_key": "k1"}, {"payload": "b", "idempotency_key": "k2"}])
    again = await sim.service.appender.append(ALICE, RUN, "s", [
        {"payload": "b-again", "idempotency_key": "k2"}, {"payload": "c"},
        {"payload": "c-again", "idempotency_key": "k3"},
        {"payload": "dup", "idempotency_key": "k3"}])
    assert first.sequences == (1, 2)
    assert (again.sequences, again.stored, again.head) == ((2, 3, 4, 4), 2, 4)
    assert await stored_payloads(sim) == ["a", "b", "c", "c-again"]


async def test_a_batch_of_only_duplicates_stores_nothing() -> None:
    sim = simulation()
    await make_stream(sim)
    await sim.service.appender.append(ALICE, RUN, "s", [{"payload": 1, "idempotency_key": "k"}])
    events_before = len(sim.ports.store.event_log(key()))
    again = await sim.service.appender.append(ALICE, RUN, "s",
                                              [{"payload": 99, "idempotency_key": "k"}])
    assert again.all_duplicates
    assert (again.sequences, again.head) == ((1,), 1)
    assert await stored_payloads(sim) == [1]
    assert len(sim.ports.store.event_log(key())) == events_before


async def test_redaction_masks_the_pinned_paths_before_the_record_is_stored() -> None:
    sim = simulation()
    await make_stream(sim, redaction={"mask": ["/user/email", "/tokens/0"]})
    await sim.service.appender.append(ALICE, RUN, "s", [{"payload": {
        "user": {"email": "a@example.com", "name": "Ann"}, "tokens": ["secret", "ok"]}}])
    [record] = (await sim.ports.store.read_page(key(), 0, 10)).records
    assert record.payload == {"user": {"email": "[redacted]", "name": "Ann"},
                              "tokens": ["[redacted]", "ok"]}
    assert "a@example.com" not in repr(sim.ports.store.event_log(key()))


async def test_an_input_stream_stages_one_outbox_row_per_new_record() -> None:
    sim = simulation()
    await make_stream(sim, direction="input")
    await sim.service.appender.append(ALICE, RUN, "s", [
        {"payload": 1, "idempotency_key": "k"}, {"payload": 2}, {"payload": 3}])
    await sim.service.appender.append(ALICE, RUN, "s", [{"payload": 1, "idempotency_key": "k"}])
    claimed = await sim.ports.outbox.claim("w", sim.ports.clock.now(), 30, 100, "local")
    assert [(d.stream, d.sequence) for d in claimed] == [(key(), 1), (key(), 2), (key(), 3)]


async def test_an_output_stream_stages_no_outbox_rows() -> None:
    sim = simulation()
    await make_stream(sim)
    await append_numbers(sim, 1, 3)
    assert sim.ports.outbox.pending() == 0


async def test_policy_reject_answers_backpressure_at_once_and_stores_nothing() -> None:
    sim = simulation()
    await make_stream(sim, credit={"max_unread_items": 3}, consumers=["ui"])
    await append_numbers(sim, 1, 2)
    with pytest.raises(Backpressure):
        await append_numbers(sim, 3, 4)  # one slot left, two records: all or nothing
    assert await stored_payloads(sim) == [1, 2]
    assert await append_numbers(sim, 3, 3) == (3,)
    with pytest.raises(Backpressure):
        await append_numbers(sim, 4, 4)


async def test_unread_bytes_are_a_ceiling_too() -> None:
    sim = simulation()
    await make_stream(sim, credit={"max_unread_bytes": 10}, consumers=["ui"])
    await sim.service.appender.append(ALICE, RUN, "s", [{"payload": "12345678"}])  # 10 bytes
    with pytest.raises(Backpressure):
        await append_numbers(sim, 1, 1)


async def test_the_total_ceiling_answers_quota_exhausted_and_stores_nothing() -> None:
    sim = simulation()
    await make_stream(sim, credit={"max_total_items": 3, "on_unread_full": "block"})
    await append_numbers(sim, 1, 2)
    with pytest.raises(QuotaExhausted):
        await append_numbers(sim, 3, 4)
    assert await stored_payloads(sim) == [1, 2]


async def test_a_batch_larger_than_the_unread_ceiling_is_too_large() -> None:
    sim = simulation()
    await make_stream(sim, consumers=["ui"], credit={"max_unread_items": 2})
    with pytest.raises(TooLarge):
        await append_numbers(sim, 1, 3)


async def test_an_inline_record_over_64_kib_is_too_large() -> None:
    sim = simulation()
    await make_stream(sim)
    with pytest.raises(TooLarge):
        await sim.service.appender.append(
            ALICE, RUN, "s", [{"data": base64.b64encode(b"x" * (INLINE_MAX_BYTES + 1)).decode()}])
    assert await stored_payloads(sim) == []


async def test_appending_to_a_closed_stream_is_refused() -> None:
    sim = simulation()
    await make_stream(sim)
    await append_numbers(sim, 1, 1)
    await sim.service.lifecycle.close(ALICE, RUN, "s")
    with pytest.raises(StreamClosed):
        await append_numbers(sim, 2, 2)
    assert await stored_payloads(sim) == [1]
