"""Create, list and read stream definitions."""

from __future__ import annotations

from typing import Annotated, Any

from litestar import Response
from litestar.di import NamedDependency
from litestar.params import FromPath, JSONBody

from application.service import RunnelService
from application.views import stream_view
from domain.principal import Principal
from entrypoints.http.openapi import Published, definition_request_schema

DefinitionBody = Annotated[dict[str, Any], Published(definition_request_schema())]
"""Validated by the domain (`build_definition`), field by field; published from its model."""


async def create_stream(
    run_id: FromPath[str],
    data: JSONBody[DefinitionBody],
    principal: NamedDependency[Principal],
    service: NamedDependency[RunnelService],
) -> Response[dict[str, Any]]:
    """Create a stream in a run. Only `stream_id` and `content_class` are required; every
    other pin gets its default (placement: this node's region). 201 when created; 200 when
    an identical definition exists; 409 `definition_conflict` when a different one does."""
    stream, created = await service.definitions.create(principal, run_id, data)
    deliveries = await service.dispatcher.counts(stream)
    return Response(stream_view(stream, deliveries), status_code=201 if created else 200)


async def list_streams(
    run_id: FromPath[str],
    principal: NamedDependency[Principal],
    service: NamedDependency[RunnelService],
) -> dict[str, Any]:
    """The run's streams this principal may read, each in the same shape as a single read."""
    streams = await service.definitions.list(principal, run_id)
    return {"run_id": run_id, "streams": [
        stream_view(stream, await service.dispatcher.counts(stream)) for stream in streams]}


async def get_stream(
    run_id: FromPath[str],
    stream_id: FromPath[str],
    principal: NamedDependency[Principal],
    service: NamedDependency[RunnelService],
) -> dict[str, Any]:
    """The definition (every pin, defaults filled) and the stream's status (with, for input
    streams, `pending_inputs`: records not yet handed to the workflow's wait service, and
    `dead_letters`: records whose delivery gave up)."""
    stream = await service.definitions.get(principal, run_id, stream_id)
    return stream_view(stream, await service.dispatcher.counts(stream))
