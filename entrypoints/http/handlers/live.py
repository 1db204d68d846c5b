"""Publish best-effort live chunks on a stream's side channel (docs/api.md)."""

from __future__ import annotations

from typing import Any

from litestar import Response
from litestar.di import NamedDependency
from litestar.params import FromPath, JSONBody

from entrypoints.http.callers import Caller
from entrypoints.http.handlers.bodies import LiveBody


async def publish_live(
    run_id: FromPath[str],
    stream_id: FromPath[str],
    data: JSONBody[LiveBody],
    caller: NamedDependency[Caller],
) -> Response[dict[str, Any]]:
    """202 `{"accepted": n}`: the chunks went to whoever follows with `?live=true` now.
    Nothing is stored; with no reader they are dropped; a chunk over 7000 serialized
    bytes arrives as `{"_truncated": true, "bytes": N}`. Readers never slow this down.
    Every reader of the stream, on any node, sees `seq` rise; a chunk re-sent with the
    same `source`, `attempt` and explicit `index` carries its first `seq` (ADR 0017)."""
    accepted = await caller.service.live.publish(caller.principal, run_id, stream_id,
                                                 data.chunks, data.source, data.attempt,
                                                 data.index)
    return Response({"accepted": accepted}, status_code=202)
