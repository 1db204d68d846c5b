"""Large objects: prepare an intent, stream the body up, commit (or abort), read it back.

The upload body is streamed from the request straight into the object store and
verified on the way (size and SHA-256 against the pins); it is never held whole.
"""

from __future__ import annotations

from typing import Any

from litestar import Request, Response
from litestar.di import NamedDependency
from litestar.params import FromPath, JSONBody
from litestar.response import Stream

from application.views import API_PREFIX
from domain.media_type import is_media_type
from domain.object_intent import ObjectIntent, ObjectPins
from entrypoints.http.callers import Caller
from entrypoints.http.handlers.bodies import PrepareObjectBody


def object_path(intent: ObjectIntent) -> str:
    return (f"{API_PREFIX}/runs/{intent.run_id}/streams/{intent.stream_id}"
            f"/objects/{intent.object_id}")


def object_view(intent: ObjectIntent) -> dict[str, Any]:
    return {
        "object_id": intent.object_id,
        "state": intent.state,
        "size": intent.size,
        "sha256": intent.sha256,
        "content_type": intent.content_type,
        "schema": intent.schema,
        "expires_at": intent.expires_at.isoformat(),
        "sequence": intent.sequence,
    }


async def prepare_object(
    run_id: FromPath[str],
    stream_id: FromPath[str],
    data: JSONBody[PrepareObjectBody],
    caller: NamedDependency[Caller],
) -> Response[dict[str, Any]]:
    """Pin a body before uploading it. 201 with the intent; the same `idempotency_key` again
    is 200 with the same intent (409 `object_intent_conflict` if it declares another body);
    413 `too_large` above 32 MiB; 422 `invalid_content_type` unless `content_type` is a media
    type (RFC 9110). `upload_url` is an absolute path on this node. The intent records who
    prepared it: upload, commit and abort (and a repeated prepare) are for that principal
    or an admin, anyone else gets 403 `not_intent_owner`. 503 `object_region_unavailable`
    when this node has an object store for none of the stream's `object_regions`: refused
    before any body is sent, nothing kept."""
    pins = ObjectPins(idempotency_key=data.idempotency_key, sha256=data.sha256, size=data.size,
                      content_type=data.content_type, schema=data.schema)
    intent, created = await caller.service.objects.prepare(caller.principal, run_id, stream_id,
                                                           pins)
    return Response({"object_id": intent.object_id, "state": intent.state,
                     "upload_url": object_path(intent) + "/body",
                     "expires_at": intent.expires_at.isoformat()},
                    status_code=201 if created else 200)


async def upload_object(
    run_id: FromPath[str],
    stream_id: FromPath[str],
    object_id: FromPath[str],
    request: Request[Any, Any, Any],
    caller: NamedDependency[Caller],
) -> dict[str, Any]:
    """Stream the raw body (any content type). It must have exactly the declared size and
    SHA-256: otherwise 422 `size_mismatch` / `digest_mismatch` and nothing is kept; a body
    longer than declared is refused as soon as it overflows. Uploading again is allowed
    until commit. Only the preparing principal or an admin (403 `not_intent_owner`, checked
    before the body is read)."""
    intent = await caller.service.objects.upload(caller.principal, run_id, stream_id,
                                                 object_id, request.stream())
    return {"state": intent.state}


async def commit_object(
    run_id: FromPath[str],
    stream_id: FromPath[str],
    object_id: FromPath[str],
    caller: NamedDependency[Caller],
) -> Response[dict[str, Any]]:
    """Append the record referencing the uploaded body: 201 with its sequence; a repeated
    commit is 200 with the same sequence; 409 `object_not_uploaded` before the upload.
    Only the preparing principal or an admin (403 `not_intent_owner`)."""
    sequence, created = await caller.service.objects.commit(caller.principal, run_id,
                                                            stream_id, object_id)
    return Response({"sequence": sequence, "state": "committed"},
                    status_code=201 if created else 200)


async def abort_object(
    run_id: FromPath[str],
    stream_id: FromPath[str],
    object_id: FromPath[str],
    caller: NamedDependency[Caller],
) -> dict[str, Any]:
    """Abort a prepared or uploaded intent and remove its body (idempotent); a committed one
    is 409 `object_state_conflict`. Only the preparing principal or an admin (403
    `not_intent_owner`)."""
    intent = await caller.service.objects.abort(caller.principal, run_id, stream_id,
                                                object_id)
    return {"state": intent.state}


async def get_object(
    run_id: FromPath[str],
    stream_id: FromPath[str],
    object_id: FromPath[str],
    caller: NamedDependency[Caller],
) -> dict[str, Any]:
    """The intent's state and pins (`sequence` once committed); no content."""
    return object_view(await caller.service.objects.get(caller.principal, run_id, stream_id,
                                                        object_id))


async def download_object(
    run_id: FromPath[str],
    stream_id: FromPath[str],
    object_id: FromPath[str],
    caller: NamedDependency[Caller],
) -> Stream:
    """Stream a committed body with its pinned content type; 404 before commit or after the
    body was deleted, 403 `egress_denied` where the stream's content may not leave."""
    intent, chunks = await caller.service.objects.body(caller.principal, run_id, stream_id,
                                                       object_id)
    # Checked at prepare since ADR 0025; an intent prepared before keeps its pin, but a
    # value that is not a media type never reaches the header (it would drop the reply).
    media_type = intent.content_type if is_media_type(intent.content_type) else (
        "application/octet-stream")
    return Stream(chunks, media_type=media_type,
                  # As pinned: given as `media_type` alone, a text/* type gets a second
                  # charset parameter appended by the framework.
                  headers={"Content-Type": media_type, "Content-Length": str(intent.size),
                           "Content-Disposition": "attachment",
                           "X-Content-Type-Options": "nosniff",
                           "X-Content-SHA256": intent.sha256})
