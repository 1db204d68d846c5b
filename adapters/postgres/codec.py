"""Serialisation of aggregates and their events with eventsourcing's own Mapper.

Events and snapshots are stored as the library's `StoredEvent` (topic + JSON
bytes), so they stay readable by its tooling. Loading a stream decodes the
snapshot kept on its row (`Snapshot.mutate(None)`), never a replay; `replay`
exists so the round trip can be checked against the event log.

A stream's snapshot leaves out its definition: that never changes, is kept on
the same row (`streams.definition`) and is put back on load. Written with every
commit, it would otherwise be most of the snapshot's bytes (and push the row
past the size at which Postgres compresses it). Snapshots of class version 2
left out the sizes of the unread records too; they are put back on load from
the records table (`stream_rows.py`), for `Stream.upcast_v2_v3`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any, TypeVar
from uuid import UUID

import msgspec
from eventsourcing.domain import Aggregate, Snapshot
from eventsourcing.persistence import (
    DatetimeAsISO,
    JSONTranscoder,
    Mapper,
    StoredEvent,
    Transcoding,
    UUIDAsHex,
)
from eventsourcing.utils import get_topic

from domain.definition import StreamDefinition
from domain.stream import Stream

A = TypeVar("A", bound=Aggregate)


class StreamDefinitionAsJson(Transcoding):
    """Pins travel as their JSON text. A definition never changes after creation and
    is frozen, so both directions are memoised: every load of a stream would
    otherwise validate the same pins again."""

    type = StreamDefinition
    name = "stream_definition"
    _CACHE_LIMIT = 4096

    def __init__(self) -> None:
        self._encoded: dict[int, tuple[StreamDefinition, str]] = {}
        self._decoded: dict[str, StreamDefinition] = {}

    def encode(self, obj: StreamDefinition) -> str:
        cached = self._encoded.get(id(obj))
        if cached is not None and cached[0] is obj:
            return cached[1]
        text = obj.model_dump_json()
        if len(self._encoded) >= self._CACHE_LIMIT:
            self._encoded.clear()
        self._encoded[id(obj)] = (obj, text)  # holding obj keeps its id from being reused
        return text

    def decode(self, data: str) -> StreamDefinition:
        cached = self._decoded.get(data)
        if cached is not None:
            return cached
        # Lenient: JSON has no tuples, and this is our own data coming back.
        definition = StreamDefinition.model_validate_json(data, strict=False)
        if len(self._decoded) >= self._CACHE_LIMIT:
            self._decoded.clear()
        self._decoded[data] = definition
        return definition


class RecentDatetimesAsISO(DatetimeAsISO):
    """The library's datetime transcoding, remembering the texts of recent datetime
    objects: a commit writes the same few objects again and again (an event's
    timestamp *is* its aggregate's `_modified_on`; creation times never change),
    and formatting one costs more than looking it up. Keyed by identity (hashing
    an aware datetime is itself costly); an entry holds its object, so the id
    cannot be reused while the entry lives."""

    _LIMIT = 4096

    def __init__(self) -> None:
        self._texts: dict[int, tuple[datetime, str]] = {}

    def encode(self, obj: datetime) -> str:
        known = self._texts.get(id(obj))
        if known is not None and known[0] is obj:
            return known[1]
        if len(self._texts) >= self._LIMIT:
            self._texts.clear()
        text = obj.isoformat()
        self._texts[id(obj)] = (obj, text)
        return text


class TaggingTranscoder(JSONTranscoder):
    """Writes the very bytes `JSONTranscoder` writes, faster (figures: ADR 0001).

    Values of registered types become the library's `{"_type_", "_data_"}` objects
    in one pass over the (shallow) state, then msgspec writes the JSON; decoding
    is the library's own. So what is stored stays readable by eventsourcing's
    `JSONTranscoder` (tests/integration/test_aggregate_codec.py checks both ways).
    """

    _encoder = msgspec.json.Encoder()

    def encode(self, obj: Any) -> bytes:
        return self._encoder.encode(self._tagged(obj))

    def _tagged(self, value: Any) -> Any:
        """`value` with registered types tagged; containers of scalars only (most of
        them) are returned as they are, not copied."""
        kind = type(value)
        if kind is dict:
            tagged: dict[Any, Any] | None = None
            for key, item in value.items():
                if type(item) not in _SCALARS:
                    if tagged is None:
                        tagged = dict(value)
                    tagged[key] = self._tagged(item)
            return value if tagged is None else tagged
        if kind is list or kind is tuple:
            if _SCALARS.issuperset(map(type, value)):  # checked in C: windows run long
                return value
            return [self._tagged(item) for item in value]
        if kind in _SCALARS:
            return value
        transcoding = self.types.get(kind)
        if transcoding is None:
            return value  # msgspec writes what json would (enums by value) or refuses
        return {"_type_": transcoding.name, "_data_": self._tagged(transcoding.encode(value))}


_SCALARS = frozenset({str, int, float, bool, type(None)})


def build_mapper(definitions: StreamDefinitionAsJson) -> Mapper[UUID]:
    transcoder = TaggingTranscoder()
    for transcoding in (UUIDAsHex(), RecentDatetimesAsISO(), definitions):
        transcoder.register(transcoding)
    # No tuple transcoding: the JSON encoder writes tuples as arrays before any
    # `default` hook runs, so aggregates keep lists (the domain assigns lists).
    return Mapper(transcoder=transcoder)


_LEFT_OUT = ("definition",)
"""The stream attributes its snapshot leaves out (see the module docstring)."""
_STREAM_TOPIC = get_topic(Stream)
_SNAPSHOT_TOPIC = get_topic(Snapshot)


class AggregateCodec:
    """Aggregates ⇄ stored events and snapshots."""

    def __init__(self) -> None:
        self._definitions = StreamDefinitionAsJson()
        self.mapper = build_mapper(self._definitions)

    def events(self, events: Iterable[Any]) -> list[StoredEvent]:
        return [self.mapper.to_stored_event(event) for event in events]

    def snapshot(self, aggregate: Aggregate) -> StoredEvent:
        """A stream's leaves out its definition (`load_stream` puts it back)."""
        if isinstance(aggregate, Stream):
            return self._stream_snapshot(aggregate)
        return self.mapper.to_stored_event(Snapshot.take(aggregate))

    def _stream_snapshot(self, stream: Stream) -> StoredEvent:
        """What `mapper.to_stored_event(Snapshot.take(stream))` stores, less the definition,
        without building the `Snapshot` only to take it apart again: a stream is
        snapshotted on every commit (tests/integration/test_aggregate_codec.py holds
        the two to the same bytes)."""
        state = dict(vars(stream))
        for name in ("_id", "_version", "_pending_events", *_LEFT_OUT):
            del state[name]
        state["class_version"] = Stream.class_version
        body = {"timestamp": Snapshot.create_timestamp(), "topic": _STREAM_TOPIC,
                "state": state}
        return StoredEvent(stream.id, stream.version, _SNAPSHOT_TOPIC,
                           self.mapper.transcoder.encode(body))

    def load_stream(self, stream_id: UUID, version: int, topic: str, state: bytes,
                    definition: str, legacy: tuple[list[int], int] | None = None) -> Stream:
        """A stream from its snapshot plus what the snapshot left out: the definition's
        JSON text and, for a snapshot from before byte offsets, `legacy`: the unread
        records' sizes (oldest first) and the head's byte offset."""
        put_back: dict[str, Any] = {"definition": self._definitions.decode(definition)}
        if legacy is not None:
            put_back["unread_sizes"], put_back["head_offset"] = legacy
        return self.load(Stream, stream_id, version, topic, state, put_back)

    def load(self, kind: type[A], aggregate_id: UUID, version: int, topic: str,
             state: bytes, put_back: dict[str, Any] | None = None) -> A:
        """Rebuild an aggregate from the snapshot stored with it (plus what it left out)."""
        snapshot = self.mapper.to_domain_event(StoredEvent(aggregate_id, version, topic,
                                                           bytes(state)))
        if put_back:
            snapshot.state.update(put_back)  # type: ignore[attr-defined]
        aggregate = snapshot.mutate(None)  # type: ignore[attr-defined]
        if not isinstance(aggregate, kind):
            raise TypeError(f"snapshot of {aggregate_id} holds a {type(aggregate).__name__}")
        return aggregate

    def replay(self, kind: type[A], stored: Sequence[StoredEvent]) -> A:
        """Fold the stored events of one aggregate, oldest first."""
        aggregate: Any = None
        for record in stored:
            aggregate = self.mapper.to_domain_event(record).mutate(aggregate)  # type: ignore[attr-defined]
        if not isinstance(aggregate, kind):
            raise TypeError(f"events do not build a {kind.__name__}")
        return aggregate
