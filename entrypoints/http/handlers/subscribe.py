"""Follow a stream over Server-Sent Events."""

from __future__ import annotations

import time
from typing import Annotated, Any

from litestar import Request
from litestar.di import NamedDependency
from litestar.params import FromPath, HeaderParameter, QueryParameter
from litestar.response import Stream

from entrypoints.http.callers import Caller
from entrypoints.http.inputs import subscribe_cursor
from entrypoints.http.openapi import CursorText
from entrypoints.http.sse.subscription import (
    ReaderLease,
    encoded_frames,
    event_stream,
    register_release,
    serve_directly,
)


async def subscribe(
    request: Request[Any, Any, Any],
    run_id: FromPath[str],
    stream_id: FromPath[str],
    caller: NamedDependency[Caller],
    after: Annotated[CursorText | None, QueryParameter(
        description="Exclusive cursor; wins over Last-Event-ID. Neither means 0.")] = None,
    last_event_id: Annotated[CursorText | None, HeaderParameter(
        name="Last-Event-ID",
        description="The id of the last record frame received (resume).")] = None,
    live: Annotated[bool, QueryParameter(
        description="Also deliver best-effort `event: live` side-channel chunks.")] = False,
) -> Stream:
    """Backfill the records above the cursor, then follow live. Frames: `event: record` with
    `id: <sequence>` and the record envelope as `data`; `event: live` (no id) when
    `live=true`; `: ping` keepalives; `event: resync` with the 410 body if retention
    overtakes the reader; `event: end` `{"reason":"closed","last_sequence":N}` after close,
    or `{"reason":"token_expired","last_sequence":N}` when the token that opened the
    subscription expires (resume with a fresh token and `Last-Event-ID: N`), or
    `{"reason":"token_revoked","last_sequence":N}` when it, or the token a subscribe token
    was minted from, is revoked.
    A bad, future or pruned cursor is answered as problem+json before the stream starts."""
    cursor = subscribe_cursor(after, last_event_id)
    principal = caller.principal
    expires_in = (None if principal.expires_at is None
                  else principal.expires_at - time.time())
    follow = await caller.service.follower.open(principal, run_id, stream_id, cursor, live,
                                                expires_in)
    lease = ReaderLease(follow, caller.metrics)
    register_release(request.scope, lease.release)
    serve_directly(follow, request.scope)
    return event_stream(encoded_frames(follow, lease.release))
