"""Access guards shared by every use case: scope, run binding, pins, region.

The stream key always carries the principal's own tenant, so another tenant's
run is indistinguishable from a missing one (404), by construction.
"""

from __future__ import annotations

from collections import OrderedDict
from datetime import datetime

from application.ports.streams import StreamStore
from domain.definition import StreamDefinition
from domain.errors import NotFound
from domain.identifiers import RunKey, StreamKey, validate_id
from domain.principal import Principal, Scope, ensure_reader, ensure_writer
from domain.residency import (
    ensure_may_serve_content_here,
    ensure_may_serve_metadata_here,
    ensure_may_write_here,
)
from domain.stream import Stream


def run_key(principal: Principal, run_id: str) -> RunKey:
    validate_id(run_id, "run_id")
    principal.require_run(run_id)
    return RunKey(principal.tenant, run_id)


def stream_key(principal: Principal, run_id: str, stream_id: str) -> StreamKey:
    return run_key(principal, run_id).stream(stream_id)


async def load_stream(store: StreamStore, key: StreamKey, now: datetime | None) -> Stream:
    """A deleted stream (a tombstone, docs/adr/0075), or one expired at `now` (its
    `expires_after_seconds` passed, docs/adr/0076), is not found either. `now=None` finds
    an expired one too: a legal hold kept it, and is placed or lifted on it."""
    stream = await store.load(key)
    if stream is None:
        raise NotFound("stream not found")
    stream.ensure_exists()
    if now is not None:
        stream.ensure_live(now)
    return stream


async def stream_for_reading(store: StreamStore, principal: Principal, key: StreamKey,
                             region: str, content: bool, now: datetime) -> Stream:
    """Guard a read; `content=True` when record content will leave through this node."""
    principal.require_scope(Scope.READ)
    stream = await load_stream(store, key, now)
    ensure_reader(stream.definition.authorization, principal, content)
    if content:
        ensure_may_serve_content_here(stream.definition.placement, region)
    else:
        ensure_may_serve_metadata_here(stream.definition.placement, region)
    return stream


class DefinitionCache:
    """Stream definitions by key, kept for the life of the process.

    Pins never change after creation, so a cached definition is never stale; a
    hot path (append) can authorise and validate without reading the stream. Beside
    it, the stream's expiry (fixed at creation too): an expired stream is not found.
    It answers nothing else about state (head, closed, erased, deleted): that is
    decided under the row lock.
    """

    def __init__(self, store: StreamStore, capacity: int = 10_000) -> None:
        self._store = store
        self._capacity = capacity
        self._definitions: OrderedDict[StreamKey, tuple[StreamDefinition, datetime | None]] \
            = OrderedDict()

    async def get(self, key: StreamKey, now: datetime) -> StreamDefinition:
        cached = self._definitions.get(key)
        if cached is not None:
            self._definitions.move_to_end(key)
        else:
            stream = await load_stream(self._store, key, now)
            cached = self._definitions[key] = stream.definition, stream.expires_at
            if len(self._definitions) > self._capacity:
                self._definitions.popitem(last=False)
        definition, expires_at = cached
        if expires_at is not None and now >= expires_at:
            raise NotFound("stream not found")
        return definition


async def definition_for_writing(definitions: DefinitionCache, principal: Principal,
                                 key: StreamKey, region: str, now: datetime
                                 ) -> StreamDefinition:
    principal.require_scope(Scope.WRITE)
    definition = await definitions.get(key, now)
    ensure_writer(definition.authorization, principal)
    ensure_may_write_here(definition.placement, region)
    return definition


async def definition_for_acking(definitions: DefinitionCache, principal: Principal,
                                key: StreamKey, region: str, now: datetime
                                ) -> StreamDefinition:
    """Guard an ack on the pins alone: a reader's command, but a state change, so only at
    the stream's metadata home."""
    principal.require_scope(Scope.READ)
    definition = await definitions.get(key, now)
    ensure_reader(definition.authorization, principal)
    ensure_may_write_here(definition.placement, region)
    return definition


async def stream_for_writing(store: StreamStore, principal: Principal, key: StreamKey,
                             region: str, now: datetime) -> Stream:
    principal.require_scope(Scope.WRITE)
    stream = await load_stream(store, key, now)
    ensure_writer(stream.definition.authorization, principal)
    ensure_may_write_here(stream.definition.placement, region)
    return stream

