"""Follow frames as Server-Sent Events (SPEC §4), and the lifetime of one subscription.

- `event: record`, `id: <sequence>`, `data: <record envelope JSON>`;
- `event: live` (no id) with `{seq, data, source, attempt, index}`;
- `: ping` comment (a message with `data=None`, or clients see an empty event);
- `event: resync` with the 410 problem body, then the stream ends;
- `event: end` with `{"reason": "closed", "last_sequence": N}` after close, or
  `{"reason": "token_expired", "last_sequence": N}` when the credential that opened
  the subscription expires (resume with a fresh one from N), or `{"reason":
  "shutdown", …}` with a jittered `retry:` when the node stops (resume anywhere
  from N), then the stream ends;
- when the database fails under an open stream (`StoreUnavailable`, a 503 had it come
  before the first frame), the stream just ends: the reader resumes from its
  `Last-Event-ID` on any node, as after any cut connection.

Frames are pulled from the follow only when the transport took the previous
one, so a slow reader costs one frame plus the socket buffers, never a queue.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, assert_never

import msgspec
from litestar.response import ServerSentEventMessage
from litestar.types import ASGIApp, Receive, Scope, Send

from application.following import (
    EndFrame,
    Frame,
    KeepaliveFrame,
    LiveFrame,
    OpenFollow,
    RecordFrame,
    ResyncFrame,
)
from application.ports import StoreUnavailable
from application.views import record_envelope
from domain.errors import CursorPruned
from entrypoints.http.problems import problem_body
from entrypoints.metrics import Metrics

SHUTDOWN_RETRY_MS = (500, 5000)
"""The `retry:` of a shutdown `end` frame is drawn from this range (milliseconds)."""
YIELD_EVERY_FRAMES = 32
"""A backfill from memory may never suspend on its own; yield to the loop this often so
a disconnect is noticed and other requests are served."""

log = logging.getLogger("runnel.http")

_encode = msgspec.json.Encoder().encode
_RELEASES = "runnel.sse.releases"

Release = Callable[[], Awaitable[None]]


def to_message(frame: Frame, run_id: str, stream_id: str) -> ServerSentEventMessage:
    match frame:
        case RecordFrame(record=record):
            envelope = record_envelope(record, run_id, stream_id)
            return ServerSentEventMessage(event="record", id=record.sequence,
                                          data=_json(envelope))
        case KeepaliveFrame():
            return ServerSentEventMessage(comment="ping", data=None)
        case LiveFrame(chunk=chunk):
            return ServerSentEventMessage(event="live", data=_json({
                "seq": chunk.seq, "data": chunk.data, "source": chunk.source,
                "attempt": chunk.attempt, "index": chunk.index}))
        case ResyncFrame(requested=requested, earliest=earliest, latest=latest):
            pruned = CursorPruned(requested, earliest, latest)
            return ServerSentEventMessage(event="resync", data=_json(problem_body(pruned)))
        case EndFrame(last_sequence=last_sequence, reason=reason):
            # Readers of a node that stops come back at once: spread them over a few seconds.
            retry = random.randint(*SHUTDOWN_RETRY_MS) if reason == "shutdown" else None
            return ServerSentEventMessage(event="end", retry=retry, data=_json(
                {"reason": reason, "last_sequence": last_sequence}))
    assert_never(frame)


def _json(value: Any) -> str:
    return _encode(value).decode()


async def sse_messages(follow: OpenFollow, run_id: str, stream_id: str,
                       release: Release) -> AsyncIterator[ServerSentEventMessage]:
    try:
        sent = 0
        async for frame in follow.frames():
            yield to_message(frame, run_id, stream_id)
            sent += 1
            if sent % YIELD_EVERY_FRAMES == 0:
                await asyncio.sleep(0)
    except StoreUnavailable as outage:
        log.warning("ending a subscription to %s/%s: %s", run_id, stream_id, outage)
    finally:
        await release()


class ReaderLease:
    """One open subscription: counted in the readers gauge until released, exactly once."""

    def __init__(self, follow: OpenFollow, metrics: Metrics) -> None:
        self._follow = follow
        self._metrics = metrics
        self._released = False
        metrics.readers.inc()

    async def release(self) -> None:
        if self._released:
            return
        self._released = True
        self._metrics.readers.dec()
        await self._follow.close()


def register_release(scope: Scope, release: Release) -> None:
    """Make `release_on_exit` call `release` when the request is over, however it ends."""
    releases = scope.get("state", {}).get(_RELEASES)
    if releases is None:
        raise RuntimeError("the subscribe route must run inside release_on_exit")
    releases.append(release)


def release_on_exit(app: ASGIApp) -> ASGIApp:
    """Route middleware for the subscribe route: whatever ends the request (the stream
    ended, the client left before the first frame, the stall guard cut it, an error),
    everything the handler registered is released at once. The frames generator releases
    too on its own exit; releases are idempotent."""

    async def middleware(scope: Scope, receive: Receive, send: Send) -> None:
        releases: list[Release] = []
        scope.setdefault("state", {})[_RELEASES] = releases
        try:
            await app(scope, receive, send)
        finally:
            for release in releases:
                await release()

    return middleware
