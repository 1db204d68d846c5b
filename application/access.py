"""Access guards shared by every use case: scope, run binding, pins, region.

The stream key always carries the principal's own tenant, so another tenant's
run is indistinguishable from a missing one (404), by construction.
"""

from __future__ import annotations

from collections import OrderedDict

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


async def load_stream(store: StreamStore, key: StreamKey) -> Stream:
    """A deleted stream (a tombstone, docs/adr/0075) is not found either."""
    stream = await store.load(key)
    if stream is None or stream.deleted:
        raise NotFound("stream not found")
    return stream


async def stream_for_reading(store: StreamStore, principal: Principal, key: StreamKey,
                             region: str, content: bool) -> Stream:
    """Guard a read; `content=True` when record content will leave through this node."""
    principal.require_scope(Scope.READ)
    stream = await load_stream(store, key)
    ensure_reader(stream.definition.authorization, principal, content)
    if content:
        ensure_may_serve_content_here(stream.definition.placement, region)
    else:
        ensure_may_serve_metadata_here(stream.definition.placement, region)
    return stream


class DefinitionCache:
    """Stream definitions by key, kept for the life of the process.

    Pins never change after creation, so a cached definition is never stale; a
    hot path (append) can authorise and validate without reading the stream. It
    answers nothing about state (head, closed, erased): that is decided under the
    row lock.
    """

    def __init__(self, store: StreamStore, capacity: int = 10_000) -> None:
        self._store = store
        self._capacity = capacity
        self._definitions: OrderedDict[StreamKey, StreamDefinition] = OrderedDict()

    async def get(self, key: StreamKey) -> StreamDefinition:
        definition = self._definitions.get(key)
        if definition is not None:
            self._definitions.move_to_end(key)
            return definition
        definition = (await load_stream(self._store, key)).definition
        self._definitions[key] = definition
        if len(self._definitions) > self._capacity:
            self._definitions.popitem(last=False)
        return definition


async def definition_for_writing(definitions: DefinitionCache, principal: Principal,
                                 key: StreamKey, region: str) -> StreamDefinition:
    principal.require_scope(Scope.WRITE)
    definition = await definitions.get(key)
    ensure_writer(definition.authorization, principal)
    ensure_may_write_here(definition.placement, region)
    return definition


async def definition_for_acking(definitions: DefinitionCache, principal: Principal,
                                key: StreamKey, region: str) -> StreamDefinition:
    """Guard an ack on the pins alone: a reader's command, but a state change, so only at
    the stream's metadata home."""
    principal.require_scope(Scope.READ)
    definition = await definitions.get(key)
    ensure_reader(definition.authorization, principal)
    ensure_may_write_here(definition.placement, region)
    return definition


async def stream_for_writing(store: StreamStore, principal: Principal, key: StreamKey,
                             region: str) -> Stream:
    principal.require_scope(Scope.WRITE)
    stream = await load_stream(store, key)
    ensure_writer(stream.definition.authorization, principal)
    ensure_may_write_here(stream.definition.placement, region)
    return stream

