"""Follow frames as Server-Sent Events (docs/api.md), and the lifetime of one subscription.

- `event: record`, `id: <sequence>`, `data: <record envelope JSON>`;
- `event: live` (no id) with `{seq, data, source, attempt, index}`;
- `: ping` comment (clients see no event);
- `event: resync` with the 410 problem body, then the stream ends;
- `event: end` with `{"reason": "closed", "last_sequence": N}` after close, or
  `{"reason": "token_expired", "last_sequence": N}` when the credential that opened
  the subscription expires (resume with a fresh one from N), `{"reason":
  "token_revoked", …}` when it (or its parent token) is revoked, or `{"reason":
  "shutdown", …}` with a jittered `retry:` when the node stops (resume anywhere
  from N), then the stream ends;
- when the database fails under an open stream (`StoreUnavailable`, a 503 had it come
  before the first frame), the stream just ends: the reader resumes from its
  `Last-Event-ID` on any node, as after any cut connection.

Frames are pulled from the follow only when the transport took the previous
one, so a slow reader costs one frame plus the socket buffers, never a queue; a caught-up
reader's frames may instead be written from the publisher's call (`serve_directly`). Their
bytes are made in `sse_frames`, a record's once for all the readers of this process.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Generic, Protocol, TypeVar

from litestar.response import Stream
from litestar.types import ASGIApp, Receive, Scope, Send

from application.follow_loop import OpenFollow
from application.ports.errors import StoreUnavailable
from entrypoints.http.sse.direct import DirectFrames
from entrypoints.http.sse.frames import FrameMemo, encode_frame
from entrypoints.http.sse.transport import body_slot
from entrypoints.observability.metrics import Metrics

YIELD_EVERY_FRAMES = 32
"""A backfill from memory may never suspend on its own; yield to the loop this often so
a disconnect is noticed and other requests are served."""
EVENT_STREAM_HEADERS = {"Cache-Control": "no-cache", "Connection": "keep-alive",
                        "X-Accel-Buffering": "no"}

FRAMES = FrameMemo()
"""This process's record frames, shared by all its readers (`sse_frames`)."""

log = logging.getLogger("runnel.http")

_RELEASES = "runnel.sse.releases"

Release = Callable[[], Awaitable[None]]


def serve_directly(follow: OpenFollow, scope: Scope, memo: FrameMemo = FRAMES) -> None:
    """Let the follow write its caught-up frames straight to this request's connection,
    when the transport offers it (ADR 0079)."""
    slot = body_slot(scope)
    if slot is not None:
        follow.serve_directly(DirectFrames(slot, memo))


def event_stream(frames: AsyncIterator[bytes]) -> Stream:
    """The response: frames already encoded go out as they are."""
    return Stream(frames, media_type="text/event-stream", headers=EVENT_STREAM_HEADERS)


async def encoded_frames(follow: OpenFollow, release: Release,
                         memo: FrameMemo = FRAMES) -> AsyncIterator[bytes]:
    frames = (encode_frame(frame, follow.key, memo) async for frame in follow.frames())
    async for frame in paced(frames, release,
                             f"{follow.key.run_id}/{follow.key.stream_id}"):
        yield frame


async def paced(frames: AsyncIterator[bytes], release: Release,
                subject: str) -> AsyncIterator[bytes]:
    """`frames` as they come, with a turn of the loop every `YIELD_EVERY_FRAMES`; a store
    outage ends them quietly (the reader resumes anywhere); `release` at the end."""
    try:
        sent = 0
        async for frame in frames:
            yield frame
            sent += 1
            if sent % YIELD_EVERY_FRAMES == 0:
                await asyncio.sleep(0)
    except StoreUnavailable as outage:
        log.warning("ending a subscription to %s: %s", subject, outage)
    finally:
        await release()


class Closable(Protocol):
    async def close(self) -> None: ...


C = TypeVar("C", bound=Closable)


class ReaderLease(Generic[C]):
    """One open subscription (of a stream, a run or a facade path): counted in the readers
    gauge until released, exactly once."""

    def __init__(self, follow: C, metrics: Metrics) -> None:
        self.follow = follow
        self._metrics = metrics
        self._released = False
        metrics.readers.inc()

    async def release(self) -> None:
        if self._released:
            return
        self._released = True
        self._metrics.readers.dec()
        await self.follow.close()


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
