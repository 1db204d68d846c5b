"""Access guards shared by every use case: scope, run binding, pins, region.

The stream key always carries the principal's own tenant, so another tenant's
run is indistinguishable from a missing one (404), by construction.
"""

from __future__ import annotations

from application.ports import StreamStore
from domain.errors import NotFound
from domain.identifiers import RunKey, StreamKey, validate_id
from domain.principal import Principal, Scope, ensure_reader, ensure_writer
from domain.residency import ensure_may_serve_content_here, ensure_may_write_here
from domain.stream import Stream


def run_key(principal: Principal, run_id: str) -> RunKey:
    validate_id(run_id, "run_id")
    principal.require_run(run_id)
    return RunKey(principal.tenant, run_id)


def stream_key(principal: Principal, run_id: str, stream_id: str) -> StreamKey:
    return run_key(principal, run_id).stream(stream_id)


async def load_stream(store: StreamStore, key: StreamKey) -> Stream:
    stream = await store.load(key)
    if stream is None:
        raise NotFound("stream not found")
    return stream


async def stream_for_reading(store: StreamStore, principal: Principal, key: StreamKey,
                             region: str, content: bool) -> Stream:
    """Guard a read; `content=True` when record content will leave through this node."""
    principal.require_scope(Scope.READ)
    stream = await load_stream(store, key)
    ensure_reader(stream.definition.authorization, principal)
    if content:
        ensure_may_serve_content_here(stream.definition.placement, region)
    return stream


async def stream_for_writing(store: StreamStore, principal: Principal, key: StreamKey,
                             region: str) -> Stream:
    principal.require_scope(Scope.WRITE)
    stream = await load_stream(store, key)
    ensure_writer(stream.definition.authorization, principal)
    ensure_may_write_here(stream.definition.placement, region)
    return stream

