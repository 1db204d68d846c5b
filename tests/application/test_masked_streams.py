"""A masked stream masks or refuses every body before anything is stored or sent (ADR 0054):
appends of every representation, live chunks, object bodies, best-effort records and the
Durable Streams facade's appends. A refused request leaves no trace. The facade creates its
streams under the content-class family rule too."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from adapters.memory.clock import FakeClock
from adapters.memory.durable_streams import MemoryFacadeCatalog
from application.durable_streams.facade import DurableStreams
from application.durable_streams.forks import FACADE_STREAM
from application.durable_streams.stream_config import StreamConfig
from application.ports.waking import LiveChunk
from domain.errors import ForbiddenContentClass, InvalidRecord, RedactionUnenforceable
from domain.redaction import MASK
from entrypoints.http.durable_streams.handlers import to_records
from entrypoints.testing.simulation import Simulation, simulation
from tests.application.support import (
    ALICE,
    FRAME_TIMEOUT,
    RUN,
    body_of,
    head_of,
    key,
    make_stream,
    object_pins,
)

SECRET = "alice@example.com"
MASK_EMAIL = {"mask": ["/user/email"]}
ALLOWING = {"mask": ["/user/email"], "allow_unmasked_bodies": True}
VALUE = {"user": {"name": "a", "email": SECRET}}


def b64(value: Any) -> str:
    raw = value if isinstance(value, bytes) else json.dumps(value).encode()
    return base64.b64encode(raw).decode()


async def stored(sim: Simulation, stream_id: str = "s") -> list[Any]:
    return list((await sim.ports.store.read_page(key(stream_id), 0, 100)).records)


async def test_json_data_is_stored_masked_and_a_batch_with_unmaskable_data_stores_nothing(
        ) -> None:
    sim = simulation()
    await make_stream(sim, redaction=MASK_EMAIL)
    await sim.service.appender.append(ALICE, RUN, "s", [
        {"payload": VALUE}, {"data": b64(VALUE), "content_type": "application/vnd.x+json"}])
    with pytest.raises(RedactionUnenforceable):
        await sim.service.appender.append(ALICE, RUN, "s", [
            {"payload": VALUE, "idempotency_key": "k"},
            {"data": b64(VALUE), "content_type": "text/plain"}])
    records = await stored(sim)
    assert [r.payload if r.has_payload else json.loads(r.data) for r in records] == [
        {"user": {"name": "a", "email": MASK}}] * 2
    assert await head_of(sim) == 2
    # The refused batch left no receipt: its key stores a record now.
    again = await sim.service.appender.append(ALICE, RUN, "s", [
        {"payload": VALUE, "idempotency_key": "k"}])
    assert again.sequences == (3,) and again.stored == 1


async def test_live_chunks_are_all_masked_or_none_is_sent() -> None:
    sim = simulation()
    await make_stream(sim, redaction=MASK_EMAIL)
    shaped = {"content_type": "application/json", "data": b64(VALUE)}
    async with sim.ports.bus.subscribe(key(), live=True) as subscription:
        with pytest.raises(RedactionUnenforceable):
            await sim.service.live.publish(ALICE, RUN, "s", [
                VALUE, {"content_type": "application/octet-stream", "data": b64(VALUE)}])
        with pytest.raises(InvalidRecord):
            await sim.service.live.publish(ALICE, RUN, "s", [
                VALUE, {"content_type": "application/json", "data": b64(b"{nope")}])
        await sim.service.live.publish(ALICE, RUN, "s", [VALUE, shaped])
        first = await subscription.next(FRAME_TIMEOUT)
        second = await subscription.next(FRAME_TIMEOUT)
    assert isinstance(first, LiveChunk) and isinstance(second, LiveChunk)
    assert first.data == {"user": {"name": "a", "email": MASK}}
    assert json.loads(base64.b64decode(second.data["data"])) == first.data
    assert first.index == 0  # the refused requests took no position before it


async def test_a_best_effort_stream_sends_its_records_masked_or_refuses_them() -> None:
    sim = simulation()
    await make_stream(sim, mode="best_effort", redaction=MASK_EMAIL)
    async with sim.ports.bus.subscribe(key(), live=True) as subscription:
        with pytest.raises(RedactionUnenforceable):
            await sim.service.appender.append(ALICE, RUN, "s", [{"data": b64(VALUE)}])
        await sim.service.appender.append(ALICE, RUN, "s", [
            {"data": b64(VALUE), "content_type": "application/json"}])
        chunk = await subscription.next(FRAME_TIMEOUT)
    assert isinstance(chunk, LiveChunk)
    assert json.loads(base64.b64decode(chunk.data["data"]))["user"]["email"] == MASK


async def test_an_object_body_is_refused_at_prepare_on_a_masked_stream_unless_allowed(
        ) -> None:
    sim = simulation()
    await make_stream(sim, "masked", redaction=MASK_EMAIL)
    await make_stream(sim, "allowing", redaction=ALLOWING)
    body = b'{"user":{"email":"' + SECRET.encode() + b'"}}'
    with pytest.raises(RedactionUnenforceable) as refused:
        await sim.service.objects.prepare(ALICE, RUN, "masked",
                                          object_pins(body, content_type="application/json"))
    assert refused.value.extra["pin"] == "redaction.mask"
    masked = await sim.ports.store.load(key("masked"))
    assert masked is not None and masked.reservations == {}  # nothing reserved
    intent, created = await sim.service.objects.prepare(ALICE, RUN, "allowing",
                                                        object_pins(body))
    await sim.service.objects.upload(ALICE, RUN, "allowing", intent.object_id, body_of(body))
    sequence, _ = await sim.service.objects.commit(ALICE, RUN, "allowing", intent.object_id)
    assert created and sequence == 1


class MaskedFacade:
    """The facade over a simulation, creating its streams with a mask (what a creator's
    `Runnel-Definition` asks for)."""

    def __init__(self, redaction: dict[str, Any]) -> None:
        self.clock = FakeClock()
        self.sim = simulation(clock=self.clock)
        self.streams = DurableStreams(self.sim.service, MemoryFacadeCatalog(), self.clock)
        self.asked = {"redaction": redaction}

    async def append(self, path: str, content_type: str, body: bytes) -> list[Any]:
        entry, _ = await self.streams.create(ALICE, path, StreamConfig(
            content_type, None, None, definition=self.asked))
        records = to_records(content_type, body, allow_empty_array=False)
        await self.streams.append(ALICE, entry, records, False, None)
        page = await self.streams.read(ALICE, entry, 0, 100)
        return [r.payload if r.has_payload else r.data for r in page.records]


async def test_the_facade_masks_each_json_message_and_json_bytes() -> None:
    facade = MaskedFacade(MASK_EMAIL)
    messages = [VALUE, {"user": {"email": SECRET}, "n": 2}]
    assert await facade.append("j", "application/json; charset=utf-8",
                               json.dumps(messages).encode()) == [
        [{"user": {"name": "a", "email": MASK}}, {"user": {"email": MASK}, "n": 2}]]
    (kept,) = await facade.append("v", "application/vnd.x+json", json.dumps(VALUE).encode())
    assert json.loads(kept) == {"user": {"name": "a", "email": MASK}}


async def test_the_facade_refuses_bytes_it_cannot_mask_unless_allowed() -> None:
    facade = MaskedFacade(MASK_EMAIL)
    with pytest.raises(RedactionUnenforceable):
        await facade.append("t", "text/plain", SECRET.encode())
    with pytest.raises(InvalidRecord):
        await facade.append("broken", "application/vnd.x+json", b'{"user": ')
    allowing = MaskedFacade(ALLOWING)
    assert await allowing.append("t", "text/plain", b"plain") == [b"plain"]


async def test_a_facade_fork_of_a_masked_stream_copies_its_json_bytes() -> None:
    facade = MaskedFacade(MASK_EMAIL)
    await facade.append("v", "application/vnd.x+json", json.dumps(VALUE).encode())
    fork, _ = await facade.streams.create(ALICE, "fork", StreamConfig(
        "application/vnd.x+json", None, None, forked_from="v", definition=facade.asked))
    page = await facade.sim.service.reading.read(ALICE, fork.run_id, FACADE_STREAM, 0, 10)
    (copied,) = page.page.records
    assert json.loads(copied.data or b"") == {"user": {"name": "a", "email": MASK}}


@pytest.mark.parametrize("content_class", ["model.reasoning.raw.v2", "acme:model.reasoning.raw"])
async def test_a_facade_stream_of_the_raw_reasoning_family_is_refused_and_leaves_no_path(
        content_class: str) -> None:
    """The facade creates its streams through the same definition rule (ADR 0055)."""
    clock = FakeClock()
    catalog = MemoryFacadeCatalog()
    streams = DurableStreams(simulation(clock=clock).service, catalog, clock)
    with pytest.raises(ForbiddenContentClass):
        await streams.create(ALICE, "p", StreamConfig("application/json", None, None,
                                                      definition={"content_class": content_class}))
    assert await catalog.find(ALICE.tenant, "p") is None
