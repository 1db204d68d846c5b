"""Create, list and read stream definitions."""

from __future__ import annotations

from typing import Annotated, Any

from litestar import Response
from litestar.di import NamedDependency
from litestar.params import FromPath, JSONBody, QueryParameter

from application.views import stream_view
from entrypoints.http.callers import Caller
from entrypoints.http.inputs import page_limit
from entrypoints.http.openapi import Published, definition_request_schema

DefinitionBody = Annotated[dict[str, Any], Published(definition_request_schema())]
"""Validated by the domain (`build_definition`), field by field; published from its model."""


async def create_stream(
    run_id: FromPath[str],
    data: JSONBody[DefinitionBody],
    caller: NamedDependency[Caller],
) -> Response[dict[str, Any]]:
    """Create a stream in a run. Only `stream_id` and `content_class` are required; every
    other pin gets its default (placement: this node's region). 201 when created; 200 when
    an identical definition exists; 409 `definition_conflict` when a different one does.
    `content_class` is pinned NFKC-normalised, case-folded and stripped, and must then be
    of `[a-z0-9._:-]`; credit pins above this server's ceilings are 422
    `invalid_definition`; a run already holding the server's maximum of streams is 409
    `too_many_streams`."""
    stream, created = await caller.service.definitions.create(caller.principal, run_id, data)
    deliveries = await caller.service.dispatcher.counts(stream)
    return Response(stream_view(stream, deliveries), status_code=201 if created else 200)


async def list_streams(
    run_id: FromPath[str],
    caller: NamedDependency[Caller],
    cursor: Annotated[str | None, QueryParameter(
        description="The `next_cursor` of the previous page (streams after that id).")] = None,
    limit: Annotated[str | None, QueryParameter(
        description="Streams the store reads for this page, 1–1000 (default 100).")] = None,
) -> dict[str, Any]:
    """The run's streams this principal may read, ascending by `stream_id`, each in the
    same shape as a single read. `next_cursor` is null on the last page; a page may hold
    fewer than `limit` streams (those the principal may not read are left out) and still
    have a next one."""
    listing = await caller.service.definitions.list(caller.principal, run_id, cursor,
                                                    page_limit(limit))
    return {"run_id": run_id, "streams": [
        stream_view(stream, await caller.service.dispatcher.counts(stream))
        for stream in listing.streams], "next_cursor": listing.next_cursor}


async def get_stream(
    run_id: FromPath[str],
    stream_id: FromPath[str],
    caller: NamedDependency[Caller],
) -> dict[str, Any]:
    """The definition (every pin, defaults filled) and the stream's status (with, for input
    streams, `pending_inputs`: records not yet handed to the workflow's wait service, and
    `dead_letters`: records whose delivery gave up)."""
    stream = await caller.service.definitions.get(caller.principal, run_id, stream_id)
    return stream_view(stream, await caller.service.dispatcher.counts(stream))
