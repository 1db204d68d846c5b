"""A reader of both layers (`follow(live=True)`) against a real server (ADR 0019): a
step's live chunks are shown until the step's stored record (the record whose
`idempotency_key` equals the chunks' `source`) arrives, and dropped after it; a
higher `attempt` of a step drops the text of the earlier attempt."""

from __future__ import annotations

import asyncio
import json
import threading
from typing import Any

from runnel_client import (
    AsyncRunnelClient,
    FollowState,
    LiveEvent,
    LiveText,
    Record,
    RunnelClient,
)

from entrypoints.testing import InMemoryRunnel
from tests.http.server import RunnelServer, token
from tests.http.support import GUARD_SECONDS
from tests.sdk.support import Collector

Item = Record | LiveEvent


def live_chunks(items: list[Item], source: str) -> list[Any]:
    return [item.chunk for item in items if isinstance(item, LiveEvent) and item.source == source]


def payloads(items: list[Item]) -> list[Any]:
    return [item.payload for item in items if isinstance(item, Record)]


class Reader:
    """A follower of both layers and the live text it would show."""

    def __init__(self, client: AsyncRunnelClient, run_id: str) -> None:
        self.state = FollowState(0)
        self.text = LiveText()
        self.collector = Collector(self._shown(client.follow(run_id, "s", live=True,
                                                             state=self.state)))

    async def _shown(self, items: Any) -> Any:
        async for item in items:
            self.text.apply(item)
            yield item

    async def wait_for(self, condition: Any) -> list[Item]:
        return await self.collector.wait_for(condition)


async def test_a_steps_live_text_is_dropped_once_its_stored_record_arrives(
        server: RunnelServer, run_id: str) -> None:
    async with AsyncRunnelClient(server.url, token()) as client:
        await client.create_stream(run_id, {"stream_id": "s", "content_class": "output.text"})
        await client.append(run_id, "s", [{"payload": "start"}])
        reader = Reader(client, run_id)
        try:
            await reader.wait_for(lambda items: len(items) >= 1)  # subscribed
            await client.publish_live(run_id, "s", ["Hel", "lo"], source="turn-1", attempt=1)
            await client.publish_live(run_id, "s", ["Wor"], source="turn-2", attempt=1)
            await reader.wait_for(lambda items: live_chunks(items, "turn-2") == ["Wor"])
            assert reader.text.chunks("turn-1") == ["Hel", "lo"]
            assert reader.text.sources() == ["turn-1", "turn-2"]

            await client.append(run_id, "s", [{"payload": {"text": "Hello"},
                                               "idempotency_key": "turn-1"}])
            await reader.wait_for(lambda items: payloads(items)[-1:] == [{"text": "Hello"}])
            assert reader.text.chunks("turn-1") == []  # replaced by the stored text
            assert reader.text.chunks("turn-2") == ["Wor"]  # not settled yet

            # A live chunk of turn-1 that arrives after its record (the layers are not
            # ordered against each other) is never shown; turn-2's chunk marks that the
            # late one went through the reader.
            await client.publish_live(run_id, "s", ["lo!"], source="turn-1", attempt=1,
                                      index=2)
            await client.publish_live(run_id, "s", ["ld"], source="turn-2", attempt=1,
                                      index=1)
            items = await reader.wait_for(
                lambda items: live_chunks(items, "turn-2") == ["Wor", "ld"])
        finally:
            await reader.collector.stop()
    assert live_chunks(items, "turn-1") == ["Hel", "lo"]
    record = next(item for item in items if isinstance(item, Record) and item.sequence == 2)
    assert (record.step, record.idempotency_key) == ("turn-1", "turn-1")
    assert reader.state.live_dropped == 1
    assert reader.text.chunks("turn-1") == []
    assert reader.text.chunks("turn-2") == ["Wor", "ld"]


async def test_a_higher_attempt_drops_the_earlier_attempts_text(server: RunnelServer,
                                                                run_id: str) -> None:
    async with AsyncRunnelClient(server.url, token()) as client:
        await client.create_stream(run_id, {"stream_id": "s", "content_class": "output.text"})
        await client.append(run_id, "s", [{"payload": "start"}])
        reader = Reader(client, run_id)
        try:
            await reader.wait_for(lambda items: len(items) >= 1)
            await client.publish_live(run_id, "s", ["a", "b"], source="turn-1", attempt=1)
            await reader.wait_for(lambda items: len(live_chunks(items, "turn-1")) == 2)
            assert reader.text.chunks("turn-1") == ["a", "b"]
            await client.publish_live(run_id, "s", ["c"], source="turn-1", attempt=2)
            await reader.wait_for(lambda items: len(live_chunks(items, "turn-1")) == 3)
            assert reader.text.chunks("turn-1") == ["c"]
            # A straggler of attempt 1 is dropped; the marker shows it was seen.
            await client.publish_live(run_id, "s", ["late"], source="turn-1", attempt=1,
                                      index=2)
            await client.publish_live(run_id, "s", ["m"], source="marker")
            items = await reader.wait_for(lambda items: live_chunks(items, "marker") == ["m"])
        finally:
            await reader.collector.stop()
    events = [item for item in items if isinstance(item, LiveEvent) and item.source == "turn-1"]
    assert [(e.chunk, e.attempt, e.supersedes) for e in events] == [
        ("a", 1, False), ("b", 1, False), ("c", 2, True)]
    assert reader.state.live_dropped == 1
    assert reader.text.chunks("turn-1") == ["c"]


async def test_the_sync_client_drops_a_settled_steps_live_chunks(server: RunnelServer,
                                                                 run_id: str) -> None:
    items: list[Item] = []
    seen = threading.Condition()

    def follow() -> None:
        with RunnelClient(server.url, token()) as sync:
            for item in sync.follow(run_id, "s", live=True):
                with seen:
                    items.append(item)
                    seen.notify_all()

    def wait_for(condition: Any) -> None:
        with seen:
            assert seen.wait_for(lambda: condition(items), timeout=GUARD_SECONDS), items

    async with AsyncRunnelClient(server.url, token()) as client:
        await client.create_stream(run_id, {"stream_id": "s", "content_class": "output.text"})
        await client.append(run_id, "s", [{"payload": "start"}])
        thread = threading.Thread(target=follow, daemon=True)
        thread.start()
        await asyncio.to_thread(wait_for, lambda items: len(items) >= 1)
        await client.publish_live(run_id, "s", ["x"], source="turn-1", attempt=1)
        await asyncio.to_thread(wait_for, lambda items: live_chunks(items, "turn-1") == ["x"])
        await client.append(run_id, "s", [{"payload": "X", "idempotency_key": "turn-1"}])
        await asyncio.to_thread(wait_for, lambda items: payloads(items)[-1:] == ["X"])
        await client.publish_live(run_id, "s", ["y"], source="turn-1", attempt=2)
        await client.publish_live(run_id, "s", ["m"], source="marker")
        await asyncio.to_thread(wait_for, lambda items: live_chunks(items, "marker") == ["m"])
        await client.close_stream(run_id, "s")
        await asyncio.to_thread(thread.join, GUARD_SECONDS)
    assert not thread.is_alive()
    assert live_chunks(items, "turn-1") == ["x"]  # even a retry's chunk: the step is done


def frame(chunk: Any, source: str | None, attempt: int | None, index: int, seq: int) -> str:
    return json.dumps({"seq": seq, "data": chunk, "source": source, "attempt": attempt,
                       "index": index})


def record_frame(sequence: int, key: str | None) -> str:
    body: dict[str, Any] = {"sequence": sequence, "content_type": "application/json",
                            "appended_at": "2026-01-01T00:00:00Z", "payload": sequence}
    if key is not None:
        body["idempotency_key"] = key
    return json.dumps(body)


def test_the_follow_state_applies_both_rules_and_keeps_them_across_reconnects() -> None:
    state = FollowState(0)
    shown = [state.accept("live", frame("a", "s1", 1, 0, 1)),
             state.accept("live", frame("b", "s1", 2, 0, 2)),
             state.accept("live", frame("stale", "s1", 1, 1, 3)),
             state.accept("live", frame("free", None, None, 0, 4)),
             state.accept("record", record_frame(1, "s1")),
             state.accept("live", frame("late", "s1", 2, 1, 5)),
             state.accept("live", frame("later", "s1", 3, 0, 6)),
             state.accept("record", record_frame(1, "s1")),  # a repeat after a reconnect
             state.accept("live", frame("late", "s1", 3, 1, 7)),
             state.accept("live", frame("other", "s2", None, 0, 8))]
    assert [getattr(item, "chunk", getattr(item, "payload", None)) for item in shown] == [
        "a", "b", None, "free", 1, None, None, None, None, "other"]
    assert [item.supersedes for item in shown if isinstance(item, LiveEvent)] == [
        False, True, False, False]
    assert (state.live_dropped, state.duplicates) == (4, 1)


def test_live_text_holds_only_unsettled_steps_current_attempt() -> None:
    state = FollowState(0)
    text = LiveText()
    for event, data in [("live", frame("a", "s1", 1, 0, 1)), ("live", frame("b", "s1", 1, 1, 2)),
                        ("live", frame({"text": "q"}, "s2", 1, 0, 3)),
                        ("live", frame("c", "s1", 2, 0, 4)),
                        ("live", frame("free", None, None, 0, 5)),
                        ("record", record_frame(1, "s2"))]:
        item = state.accept(event, data)
        if item is not None:
            text.apply(item)
    assert text.sources() == ["s1"]
    assert text.chunks("s1") == ["c"]
    assert text.chunks("s2") == []
    assert text.chunks(None) == []  # chunks that name no step are not kept


async def test_the_in_memory_follower_applies_the_same_rules() -> None:
    async with InMemoryRunnel() as node, node.async_client() as runnel:
        await runnel.create_stream("r", {"stream_id": "s", "content_class": "output.text"})
        await runnel.append("r", "s", [{"payload": "start"}])
        follower = Collector(runnel.follow("r", "s", live=True))
        try:
            await follower.wait_for(lambda items: len(items) >= 1)  # it is following
            await runnel.publish_live("r", "s", ["a"], source="s1", attempt=1)
            await runnel.publish_live("r", "s", ["b"], source="s1", attempt=2)
            await runnel.publish_live("r", "s", ["stale"], source="s1", attempt=1, index=1)
            await follower.wait_for(lambda items: len(items) >= 3)
            await runnel.append("r", "s", [{"payload": "A", "idempotency_key": "s1"}])
            await follower.wait_for(lambda items: len(items) >= 4)
            await runnel.publish_live("r", "s", ["late"], source="s1", attempt=2, index=1)
            await runnel.publish_live("r", "s", ["m"], source="marker")
            items = await follower.wait_for(lambda items: live_chunks(items, "marker") == ["m"])
        finally:
            await follower.stop()
        records = (await runnel.read("r", "s")).records
    assert live_chunks(items, "s1") == ["a", "b"]
    assert [item.step for item in items if isinstance(item, Record)] == [None, "s1"]
    assert records[1].idempotency_key == "s1"
