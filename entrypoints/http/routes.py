"""The route table: which handler answers which method and path, with its status code,
body ceiling and documentation. Paths, below `/api/workflow-streams`: docs/api.md."""

from __future__ import annotations

from http import HTTPStatus
from typing import Any

from litestar import Router, delete, get, post, put
from litestar.handlers import HTTPRouteHandler
from litestar.openapi.datastructures import ResponseSpec

from application.views import API_PREFIX
from domain.records import OBJECT_MAX_BYTES
from entrypoints.composition.settings import Settings
from entrypoints.http import responses as shapes
from entrypoints.http.callers import Callers
from entrypoints.http.handlers import (
    consumers,
    deliveries,
    lifecycle,
    live,
    objects,
    operations,
    records,
    runs,
    streams,
    viewer,
)
from entrypoints.http.handlers.bodies import AppendRequest
from entrypoints.http.handlers.run_subscribe import subscribe_run
from entrypoints.http.handlers.subscribe import subscribe
from entrypoints.http.handlers.subscribe_token import mint_subscribe_token
from entrypoints.http.openapi import RawBodyOperation
from entrypoints.http.problems import PROBLEM_MEDIA_TYPE, Problem
from entrypoints.http.responses import spec
from entrypoints.http.sse.subscription import release_on_exit

RUN = "/runs/{run_id:str}"
STREAM = RUN + "/streams/{stream_id:str}"
OBJECTS = STREAM + "/objects"
OBJECT = OBJECTS + "/{object_id:str}"
SECURITY: list[dict[str, list[str]]] = [{"BearerToken": []}]


EVERY_ROUTE = (400, 401, 403, 404, 431, 503)
"""What any API route may answer: a malformed id or parameter, no or a bad token, a token
without the scope, an unknown (or another tenant's) run, too large headers, a store that
does not answer (`store_unavailable`)."""


def problems(*statuses: int) -> dict[int, ResponseSpec]:
    """OpenAPI entries for the problem responses a route may give (and `EVERY_ROUTE`'s)."""
    return {status: ResponseSpec(data_container=Problem, media_type=PROBLEM_MEDIA_TYPE,
                                 generate_examples=False,
                                 description=HTTPStatus(status).phrase + " (problem+json)")
            for status in sorted({*EVERY_ROUTE, *statuses})}


def answers(*statuses: int, schema: dict[str, Any]) -> dict[int, ResponseSpec]:
    """The success responses of a route, all of one shape."""
    return {status: spec(schema, status) for status in statuses}


def api_router(settings: Settings, callers: Callers) -> Router:
    """Each route names one dependency, `caller` (ADR 0049): the bearer token's, but for
    the subscribe route (header or `?access_token=`) and the subscribe-token route (with
    the minter)."""
    small = settings.max_body_bytes
    handlers: list[HTTPRouteHandler] = [
        post(RUN + "/streams", status_code=201, request_max_body_size=small,
             summary="Create a stream definition", tags=["streams"],
             responses={**answers(200, 201, schema=shapes.stream_view()),
                        **problems(409, 410, 413, 421, 422)})(streams.create_stream),
        get(RUN + "/streams", summary="List a run's streams", tags=["streams"],
            responses={**answers(200, schema=shapes.stream_list()), **problems()})(
            streams.list_streams),
        get("/runs", summary="List the tenant's runs", tags=["runs"],
            responses={**answers(200, schema=shapes.run_list()), **problems()})(runs.list_runs),
        get(STREAM + "/deliveries", summary="Read an input stream's pending deliveries, "
            "dead letters and re-drives", tags=["streams"],
            responses={**answers(200, schema=shapes.deliveries()), **problems()})(
            deliveries.get_deliveries),
        post(STREAM + "/deliveries/redrive", status_code=200, request_max_body_size=small,
             summary="Re-drive an input stream's dead letters", tags=["streams"],
             responses={**answers(200, schema=shapes.redriven()),
                        **problems(409, 410, 413, 421, 503)})(
            deliveries.redrive_dead_letters),
        get(STREAM, summary="Read a definition and status", tags=["streams"],
            responses={**answers(200, schema=shapes.stream_view()), **problems()})(
            streams.get_stream),
        post(STREAM + "/records", status_code=201, request_class=AppendRequest,
             request_max_body_size=settings.max_append_body_bytes,
             summary="Append records (batch)", tags=["records"],
             responses={**answers(200, 201, schema=shapes.appended()),
                        202: spec(shapes.accepted(), 202),
                        **problems(409, 410, 413, 421, 422, 429, 503)})(
                 records.append_records),
        post(STREAM + "/live", status_code=202,
             request_max_body_size=settings.max_append_body_bytes,
             summary="Publish best-effort live chunks (stored nowhere)", tags=["records"],
             responses={**answers(202, schema=shapes.accepted()),
                        **problems(409, 410, 413, 421, 422)})(live.publish_live),
        get(STREAM + "/records", summary="Read records above a cursor", tags=["records"],
            responses={**answers(200, schema=shapes.records_page()),
                       **problems(403, 410, 429)})(
            records.read_records),
        get(STREAM + "/subscribe", summary="Follow a stream (Server-Sent Events)",
            tags=["records"], media_type="text/event-stream", middleware=[release_on_exit],
            dependencies={"caller": callers.subscriber()},
            responses={200: ResponseSpec(
                data_container=str, media_type="text/event-stream", generate_examples=False,
                description=shapes.EVENT_STREAM),
                       **problems(410, 429)})(subscribe),
        get(RUN + "/subscribe", summary="Follow every stream of a run (Server-Sent Events)",
            tags=["records"], media_type="text/event-stream", middleware=[release_on_exit],
            responses={200: ResponseSpec(
                data_container=str, media_type="text/event-stream", generate_examples=False,
                description=shapes.RUN_EVENT_STREAM),
                       **problems(429)})(subscribe_run),
        post(STREAM + "/subscribe-token", status_code=201, request_max_body_size=small,
             summary="Mint a short-lived subscribe token for `?access_token=`",
             tags=["records"], dependencies={"caller": callers.minter()},
             responses={**answers(201, schema=shapes.subscribe_token()),
                        **problems(413)})(mint_subscribe_token),
        post(STREAM + "/consumers/{consumer_id:str}/ack", status_code=200,
             request_max_body_size=small, summary="Acknowledge a consumer's progress",
             tags=["consumers"], responses={**answers(200, schema=shapes.acked()),
                                            **problems(409, 413, 421, 503)})(consumers.ack),
        post(STREAM + "/close", status_code=200, request_max_body_size=small,
             summary="Close a stream", tags=["streams"],
             responses={**answers(200, schema=shapes.closed()), **problems(421, 503)})(
                 lifecycle.close_stream),
        put(STREAM + "/legal-hold", request_max_body_size=small,
            summary="Place or lift a legal hold", tags=["streams"],
            responses={**answers(200, schema=shapes.legal_hold()),
                       **problems(413, 421, 422, 503)})(lifecycle.set_legal_hold),
        *object_handlers(settings),
        delete(STREAM, status_code=200, summary="Delete a stream", tags=["streams"],
               responses={**answers(200, schema=shapes.stream_deleted()),
                          **problems(409, 421, 503)})(lifecycle.delete_stream),
        delete(RUN, status_code=200, summary="Erase a run", tags=["runs"],
               responses={**answers(200, schema=shapes.erased()), **problems(421, 503)})(
            lifecycle.erase_run),
    ]
    return Router(path=API_PREFIX, route_handlers=handlers, security=SECURITY,
                  dependencies={"caller": callers.bearer()})


def object_handlers(settings: Settings) -> list[HTTPRouteHandler]:
    """Large objects (docs/api.md). Only the upload takes a large body (up to 32 MiB,
    streamed)."""
    small = settings.max_body_bytes
    return [
        post(OBJECTS, status_code=201, request_max_body_size=small,
             summary="Prepare an object upload", tags=["objects"],
             responses={**answers(200, 201, schema=shapes.prepared()),
                        **problems(409, 410, 413, 421, 422, 503)})(objects.prepare_object),
        put(OBJECT + "/body", status_code=200, request_max_body_size=OBJECT_MAX_BYTES,
            operation_class=RawBodyOperation,
            summary="Upload an object body (raw bytes, streamed)", tags=["objects"],
            responses={**answers(200, schema=shapes.object_state("uploaded")),
                       **problems(409, 410, 413, 421, 422, 503)})(objects.upload_object),
        post(OBJECT + "/commit", status_code=201, request_max_body_size=small,
             summary="Commit an uploaded object as a record", tags=["objects"],
             responses={**answers(200, 201, schema=shapes.committed()),
                        **problems(409, 410, 421, 429, 503)})(objects.commit_object),
        post(OBJECT + "/abort", status_code=200, request_max_body_size=small,
             summary="Abort an object upload", tags=["objects"],
             responses={**answers(200, schema=shapes.object_state("aborted")),
                        **problems(409, 421, 503)})(objects.abort_object),
        get(OBJECT, summary="Read an object's state", tags=["objects"],
            responses={**answers(200, schema=shapes.object_view()), **problems()})(
                objects.get_object),
        get(OBJECT + "/body", summary="Download a committed object body (its pinned content "
            "type)", tags=["objects"],
            responses={200: ResponseSpec(data_container=bytes, media_type="*/*",
                                         generate_examples=False,
                                         description="The body, with its pinned content type"),
                       **problems(503)})(
                objects.download_object),
    ]


def operation_handlers() -> list[Any]:
    return [
        get("/healthz", summary="Liveness", tags=["operations"],
            responses=answers(200, schema=shapes.status("ok")))(operations.healthz),
        get("/readyz", summary="Readiness (the store answers)", tags=["operations"],
            responses={**answers(200, schema=shapes.status("ready")),
                       503: problems(503)[503]})(operations.readyz),
        get("/", summary="The web viewer", tags=["operations"], media_type="text/html",
            include_in_schema=False)(viewer.viewer),
        get("/console/{name:str}", summary="The console's files", tags=["operations"],
            include_in_schema=False)(viewer.console_file),
        get("/runnel.js", summary="The browser follower (ES module)", tags=["operations"],
            media_type="text/javascript", include_in_schema=False)(viewer.runnel_js),
        get("/metrics", summary="Prometheus metrics (bearer: RUNNEL_METRICS_TOKEN)",
            tags=["operations"], media_type="text/plain",
            responses={401: problems(401)[401]})(operations.metrics_text),
    ]
