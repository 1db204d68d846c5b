"""Aggregates survive storage: snapshot and event-log round trips give equal state.

The store loads a stream from the snapshot on its row and never replays; these
tests hold both paths to the same answer: `vars()` of the decoded snapshot and
of the replayed events equal `vars()` of the original aggregate, after any
sequence of commands (Hypothesis), and for what the store really wrote.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from uuid import UUID

import asyncpg
import pytest
from eventsourcing.domain import Snapshot
from eventsourcing.persistence import DatetimeAsISO, JSONTranscoder, StoredEvent, UUIDAsHex
from hypothesis import given, settings
from hypothesis import strategies as st

from adapters.postgres import open_postgres
from adapters.postgres.codec import AggregateCodec, RecentDatetimesAsISO, StreamDefinitionAsJson
from domain.definition import build_definition
from domain.errors import DomainError
from domain.identifiers import StreamKey
from domain.object_intent import AuthorizationReceipt, ObjectIntent, ObjectPins
from domain.records import Draft
from domain.stream import Stream
from tests.integration.support import RUN, WRITER, definition, service_on
from tests.pg import pg_dsn, pg_template  # noqa: F401  (fixtures)

NOW = datetime(2026, 1, 1, tzinfo=UTC)
KEY = StreamKey("t", "r", "s")
codec = AggregateCodec()
LIBRARY = JSONTranscoder()  # eventsourcing's own, with the same transcodings
for transcoding in (UUIDAsHex(), DatetimeAsISO(), StreamDefinitionAsJson()):
    LIBRARY.register(transcoding)

commands = st.lists(st.one_of(
    st.tuples(st.just("append"), st.lists(st.integers(0, 5000), min_size=1, max_size=5)),
    st.tuples(st.just("ack"), st.sampled_from(["ui", "audit", "late"]), st.integers(0, 40)),
    st.tuples(st.just("prune"), st.integers(0, 40)),
    st.tuples(st.just("hold"), st.booleans()),
    st.tuples(st.just("close")),
    st.tuples(st.just("erase")),
), max_size=25)


def run_commands(stream: Stream, script: list[tuple[object, ...]]) -> None:
    offsets: dict[int, int] = {}  # what each record would store (ADR 0047)

    def stored(sequence: int) -> int | None:
        return offsets.get(sequence) if stream.offset_needed(sequence) else None

    for command in script:
        try:
            match command:
                case ("append", sizes):
                    drafts = [Draft("application/json", size) for size in sizes]
                    plan = stream.plan_append(drafts, {})
                    stream.append(plan)
                    offsets.update(zip((n for n, _ in plan.new), plan.offsets, strict=True))
                case ("ack", consumer, sequence):
                    stream.ack(consumer, sequence, "alice", stored(sequence))
                case ("prune", through):
                    stream.prune(through, stored(min(through, stream.head)))
                case ("hold", held):
                    stream.set_legal_hold(held, "audit" if held else None)
                case ("close",):
                    stream.close()
                case ("erase",):
                    stream.erase()
        except DomainError:
            pass


def round_trips(aggregate: Stream | ObjectIntent, events: list[StoredEvent]) -> None:
    snapshot = codec.snapshot(aggregate)
    loaded: Stream | ObjectIntent
    if isinstance(aggregate, Stream):
        # The definition is kept on the row beside the snapshot, as its JSON text; credit
        # is counters (no list of unread sizes any more).
        assert b'"definition"' not in snapshot.state and b'"unread_sizes"' not in snapshot.state
        assert_like_the_library_snapshot(aggregate, snapshot)
        loaded = codec.load_stream(aggregate.id, aggregate.version, snapshot.topic,
                                   snapshot.state, aggregate.definition.model_dump_json())
    else:
        loaded = codec.load(ObjectIntent, aggregate.id, aggregate.version, snapshot.topic,
                            snapshot.state)
    assert vars(loaded) == vars(aggregate)
    replayed = codec.replay(type(aggregate), events)
    assert vars(replayed) == vars(aggregate)
    for stored in (snapshot, *events):  # byte for byte what the library itself writes
        state = LIBRARY.decode(stored.state)
        assert LIBRARY.encode(state) == stored.state
        assert codec.mapper.transcoder.decode(stored.state) == state


def assert_like_the_library_snapshot(stream: Stream, snapshot: StoredEvent) -> None:
    """The stream snapshot is what the library's own `Snapshot.take` + `Mapper` store, less
    what the row keeps: same ids, topic, keys in the same order, same values (bar the time)."""
    library = codec.mapper.to_stored_event(Snapshot.take(stream))
    assert (snapshot.originator_id, snapshot.originator_version, snapshot.topic) == (
        library.originator_id, library.originator_version, library.topic)
    ours, theirs = LIBRARY.decode(snapshot.state), LIBRARY.decode(library.state)
    del theirs["state"]["definition"]
    ours["timestamp"] = theirs["timestamp"]
    assert LIBRARY.encode(ours) == LIBRARY.encode(theirs)


@settings(max_examples=60, deadline=None)
@given(commands)
def test_any_command_history_round_trips_through_snapshot_and_events(
        script: list[tuple[object, ...]]) -> None:
    raw = definition("s", consumers=["ui", "audit"], redaction={"mask": ["/user/email"]},
                     credit={"max_unread_items": 50, "on_unread_full": "block"})
    stream = Stream.start(KEY, build_definition(raw, "eu-1"), NOW)
    run_commands(stream, script)
    round_trips(stream, codec.events(stream.collect_events()))


def test_an_object_intent_round_trips_through_snapshot_and_events() -> None:
    body_digest = "ab" * 32
    intent = ObjectIntent.prepare(
        KEY, ObjectPins("o1", body_digest, 10, "application/pdf", "invoice.v1"),
        AuthorizationReceipt("alice", ("streams:read", "streams:write"), None),
        NOW + timedelta(hours=1), "eu-1")
    intent.record_upload(10, body_digest)
    intent.commit(7)
    round_trips(intent, codec.events(intent.collect_events()))


@pytest.mark.postgres
async def test_the_event_log_the_store_writes_replays_to_the_snapshot_it_keeps(
        pg_dsn: str) -> None:  # noqa: F811
    adapters = await open_postgres(pg_dsn, migrate=False)
    try:
        service = service_on(adapters)
        await service.definitions.create(WRITER, RUN, definition("s", consumers=["ui"]))
        for n in range(5):
            await service.appender.append(WRITER, RUN, "s", [{"payload": n}] * (n + 1))
        await service.acknowledger.ack(WRITER, RUN, "s", "ui", 4)
        await service.lifecycle.close(WRITER, RUN, "s")
        key = StreamKey(WRITER.tenant, RUN, "s")
        loaded = await adapters.store.load(key)
    finally:
        await adapters.close()
    connection = await asyncpg.connect(pg_dsn)
    try:
        rows = await connection.fetch(
            "SELECT originator_id, originator_version, topic, state FROM stream_events "
            "WHERE originator_id = $1 ORDER BY originator_version", key.aggregate_id)
    finally:
        await connection.close()
    events = [StoredEvent(UUID(str(r["originator_id"])), r["originator_version"], r["topic"],
                          bytes(r["state"])) for r in rows]
    assert [e.originator_version for e in events] == list(range(1, 9))
    assert loaded is not None and loaded.version == 8
    assert vars(codec.replay(Stream, events)) == vars(loaded)


def test_a_remembered_datetime_text_belongs_to_its_own_object() -> None:
    transcoding = RecentDatetimesAsISO()
    utc = datetime(2026, 1, 1, 12, tzinfo=UTC)
    paris = utc.astimezone(timezone(timedelta(hours=1)))
    assert utc == paris  # one instant: equal, and equal as dictionary keys
    assert transcoding.encode(utc) == "2026-01-01T12:00:00+00:00"
    assert transcoding.encode(paris) == "2026-01-01T13:00:00+01:00"
    assert transcoding.encode(utc) == "2026-01-01T12:00:00+00:00"
    assert transcoding.encode(datetime(2026, 1, 1, 12, tzinfo=UTC)) == "2026-01-01T12:00:00+00:00"
