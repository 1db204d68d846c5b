"""Follow every stream of a run the caller may read over Server-Sent Events (ADR 0073)."""

from __future__ import annotations

import time
from typing import Annotated, Any

from litestar import Request
from litestar.di import NamedDependency
from litestar.params import FromPath, HeaderParameter, QueryParameter
from litestar.response import Stream

from domain.run_filter import RunFilter
from entrypoints.http.callers import Caller
from entrypoints.http.inputs import run_subscribe_cursor
from entrypoints.http.sse.run_subscription import encoded_run_frames
from entrypoints.http.sse.subscription import ReaderLease, event_stream, register_release

RUN_CURSOR = ("A compound cursor: `stream_id=sequence` entries joined by `,` (a stream it "
              "does not name starts at 0); at most 64 entries and 4096 characters.")


async def subscribe_run(
    request: Request[Any, Any, Any],
    run_id: FromPath[str],
    caller: NamedDependency[Caller],
    after: Annotated[str | None, QueryParameter(
        description=RUN_CURSOR + " Wins over Last-Event-ID; neither means the start.")] = None,
    last_event_id: Annotated[str | None, HeaderParameter(
        name="Last-Event-ID",
        description="The id of the last record frame received (resume): " + RUN_CURSOR)
    ] = None,
    live: Annotated[bool, QueryParameter(
        description="Also deliver best-effort `event: live` side-channel chunks.")] = False,
    streams: Annotated[str | None, QueryParameter(
        description="Only these stream ids, joined by `,` (at most 64).")] = None,
    content_class: Annotated[str | None, QueryParameter(
        description="Only the streams pinned to this content class.")] = None,
) -> Stream:
    """Backfill then follow every stream of the run the caller may read, and each stream
    created later, as ONE subscription. Every frame names its stream: `event: record`
    with `id: <compound cursor>` and the record envelope with its `stream_id` as `data`;
    `event: live` (with `live=true`); `event: resync` (that stream's cursor was pruned) and
    `event: end` `{"stream_id","reason":"closed","last_sequence"}` end one stream;
    `event: run_end` `{"reason","cursor"}` ends the subscription (`erased`,
    `too_many_streams`, `token_expired`, `token_revoked`, `shutdown`); `: ping`
    keepalives. Streams the caller may not read are absent. A malformed cursor is 400
    `invalid_cursor`, an oversize one 400 `cursor_too_large`, a run with more streams to
    follow than one cursor holds 400 `too_many_streams_to_follow`, all before the stream
    starts."""
    cursor = run_subscribe_cursor(after, last_event_id)
    wanted = RunFilter.parse(streams, content_class)
    principal = caller.principal
    expires_in = (None if principal.expires_at is None
                  else principal.expires_at - time.time())
    follow = await caller.service.run_follower.open(principal, run_id, cursor, wanted, live,
                                                    expires_in)
    lease = ReaderLease(follow, caller.metrics)
    register_release(request.scope, lease.release)
    return event_stream(encoded_run_frames(follow, run_id, lease.release))
