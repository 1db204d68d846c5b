"""The frames of one run subscription (a run follow over Server-Sent Events): pulled only
when the transport took the previous one, and the run follow (its slot, its streams'
registrations) released exactly once however the request ends, as for a single stream's
subscription (`subscription.py`)."""

from __future__ import annotations

from collections.abc import AsyncIterator

from application.run_follow import RunFollow
from entrypoints.http.sse.run_frames import encode_run_frame
from entrypoints.http.sse.subscription import Release, paced


async def encoded_run_frames(follow: RunFollow, run_id: str,
                             release: Release) -> AsyncIterator[bytes]:
    frames = (encode_run_frame(frame, run_id) async for frame in follow.frames())
    async for frame in paced(frames, release, f"run {run_id}"):
        yield frame
