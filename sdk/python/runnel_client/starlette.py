"""Proxy a follow to a browser as Server-Sent Events, from a Starlette or FastAPI app, so that
the browser never holds a Runnel token (the `starlette` extra: `pip install
'runnel-client[starlette]'`).

    from runnel_client.starlette import follow_response

    @app.get("/runs/{run_id}/answer/events")
    async def answer_events(request: Request, run_id: str) -> Response:
        ...  # your own authentication and authorization of the browser
        return await follow_response(runnel, request, run_id, "answer", live=True)

Rules:
- the browser's cursor is honoured as Runnel honours it: `?after=` wins, else the
  `Last-Event-ID` header (which `EventSource` sends when it reconnects by itself), else
  0; anything but a non-negative integer is a 400, before Runnel is asked;
- the stream is looked up first (`get_stream`, with your client's token): a refusal is
  answered with Runnel's status and problem body, and no event stream starts (so an
  `EventSource` stops instead of retrying);
- the follow is the SDK's (`AsyncRunnelClient.follow`): it reconnects across server
  restarts and, with `token_provider`, renews your token when Runnel ends the
  subscription at its expiry, so the browser's stream does not break for either. It
  yields what the two-layer rules let through (ADR 0019);
- the browser gets Runnel's frames as Runnel sends them (`record` with `id: <sequence>`,
  `live`, `end`, `resync`: docs/api.md), and `: ping` after `keepalive_seconds` of quiet;
  a refusal while following ends the stream with `end` `{"reason": "error", "code"}`;
- when the browser leaves, the follow is cancelled: its subscription to Runnel ends.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response, StreamingResponse

from runnel_client.aio import AsyncRunnelClient, TokenProvider
from runnel_client.errors import ResyncRequired, RunnelError
from runnel_client.wire import LiveEvent, Record

KEEPALIVE_SECONDS = 15.0
MAX_CURSOR_DIGITS = 19
"""A sequence is a signed 64-bit integer."""
BUFFER = 64
"""Items read ahead of a slow browser; the follow waits (as Runnel's own stream does)."""


def requested_cursor(request: Request) -> int:
    """The browser's cursor: `?after=`, else `Last-Event-ID`, else 0 (ValueError if bad)."""
    raw = request.query_params.get("after", request.headers.get("last-event-id", "0")).strip()
    if not (raw.isascii() and raw.isdigit() and len(raw) <= MAX_CURSOR_DIGITS):
        raise ValueError(f"a cursor is a non-negative integer, not {raw[:40]!r}")
    return int(raw)


async def follow_response(runnel: AsyncRunnelClient, request: Request, run_id: str,
                          stream_id: str, *, live: bool = False,
                          token_provider: TokenProvider | None = None,
                          keepalive_seconds: float = KEEPALIVE_SECONDS) -> Response:
    """A `text/event-stream` response following `run_id`/`stream_id` from the browser's
    cursor, with `runnel`'s credentials (see the module's rules)."""
    try:
        cursor = requested_cursor(request)
    except ValueError as bad:
        return PlainTextResponse(str(bad), status_code=400)
    try:
        await runnel.get_stream(run_id, stream_id)
    except RunnelError as refused:
        return JSONResponse(refused.problem, status_code=refused.status,
                            media_type="application/problem+json")
    items = runnel.follow(run_id, stream_id, cursor, live=live, token_provider=token_provider)
    return StreamingResponse(_frames(items, cursor, keepalive_seconds),
                             media_type="text/event-stream",
                             headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})


_CLOSED = object()


async def _frames(items: AsyncIterator[Record | LiveEvent], cursor: int,
                  keepalive_seconds: float) -> AsyncIterator[str]:
    queue: asyncio.Queue[object] = asyncio.Queue(maxsize=BUFFER)

    async def pump() -> None:
        try:
            async for item in items:
                await queue.put(item)
            await queue.put(_CLOSED)
        except RunnelError as refused:
            await queue.put(refused)

    task = asyncio.create_task(pump())
    try:
        while True:
            try:
                item = await asyncio.wait_for(queue.get(), keepalive_seconds)
            except TimeoutError:
                yield ": ping\n\n"
                continue
            if isinstance(item, Record):
                cursor = item.sequence
                yield _frame("record", envelope(item), item.sequence)
            elif isinstance(item, LiveEvent):
                yield _frame("live", item.data)
            elif isinstance(item, ResyncRequired):
                yield _frame("resync", item.problem)
                return
            elif isinstance(item, RunnelError):
                yield _frame("end", {"reason": "error", "code": item.code})
                return
            else:
                yield _frame("end", {"reason": "closed", "last_sequence": cursor})
                return
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


def _frame(event: str, data: Any, sequence: int | None = None) -> str:
    head = f"event: {event}\n" + (f"id: {sequence}\n" if sequence is not None else "")
    return head + f"data: {json.dumps(data, separators=(',', ':'), ensure_ascii=False)}\n\n"


def envelope(record: Record) -> dict[str, Any]:
    """A record as Runnel's read page and `record` frames carry it."""
    body: dict[str, Any] = {"sequence": record.sequence, "content_type": record.content_type,
                            "appended_at": record.appended_at}
    if record.object is not None:
        body["object"] = record.object
    elif record.data is not None:
        body["data"] = record.data
    else:
        body["payload"] = record.payload
    if record.idempotency_key is not None:
        body["idempotency_key"] = record.idempotency_key
    return body
