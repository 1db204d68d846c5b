"""SSE live mode: `event: data` per batch, each followed by `event: control` with the next
offset, the cursor, `upToDate` and `streamClosed`.

Rules:
- a connection holds ONE Runnel follow (`DurableStreams.follow`: the readers pin, a
  subscription slot, a wake registration) for its whole life, and its records come in the
  wakes: no store read per batch; a batch's `event: data` is made once per process for
  all readers (`DataMemo`, ADR 0071);
- a connection that starts caught up is told so at once (a control event, `upToDate`);
- a batch and its control event leave as one write: a reader that stops at the first
  `event: control` it sees (the text may hold that line as data) has the real one too;
- the connection ends after a control event that says closed; at the follow's end when its
  token is revoked or expires or the node drains, and before any further write once the
  token may not be served (ADR 0060: the protocol has no frame to say why; the reconnect is
  refused); and at the first keepalive once it has been open `RECONNECT_SECONDS`, so that
  clients reconnect, as the protocol asks (ADR 0041);
- data lines are split on every line break, so a payload can never end an event or start
  a forged one (`data_memo.data_event`);
- a store outage under an open stream ends it (the reader resumes from its last offset).
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable

from application.follow_loop import OpenFollow
from application.ports.errors import StoreUnavailable
from application.ports.records import StoredRecord
from entrypoints.http.durable_streams import wire
from entrypoints.http.durable_streams.batches import Batch, Ended, Tick, batches
from entrypoints.http.durable_streams.data_memo import DataMemo, encode
from entrypoints.http.durable_streams.reads import ReadPlan, render

log = logging.getLogger("runnel.durable_streams")

RECONNECT_SECONDS = 60.0
PING = b": ping\n\n"

EVENTS = DataMemo()
"""This process's `event: data` bytes, shared by all its facade readers."""


def control_event(fields: dict[str, object]) -> bytes:
    return f"event: control\ndata:{json.dumps(fields, separators=(',', ':'))}\n\n".encode()


def control_of(plan: ReadPlan, after: int, up_to_date: bool, closed: bool) -> bytes:
    fields: dict[str, object] = {"streamNextOffset": wire.offset_of(after)}
    if closed:
        fields["streamClosed"] = True
        fields["upToDate"] = True
    else:
        fields["streamCursor"] = plan.cursor()
        if up_to_date:
            fields["upToDate"] = True
    return control_event(fields)


async def sse_frames(plan: ReadPlan, follow: OpenFollow, release: Callable[[], Awaitable[None]],
                     memo: DataMemo = EVENTS) -> AsyncIterator[bytes]:
    content_type = plan.entry.content_type
    text = wire.is_text(content_type)

    def build(records: list[StoredRecord]) -> bytes:
        return encode(render(content_type, records), text)

    loop = asyncio.get_running_loop()
    started = loop.time()
    try:
        if follow.cursor >= follow.head and not follow.closed:
            yield control_of(plan, follow.cursor, True, False)
        async for item in batches(follow):
            if isinstance(item, Ended) or not plan.still_valid(plan.principal):
                return
            if isinstance(item, Tick):
                if loop.time() - started >= RECONNECT_SECONDS:
                    return
                yield PING
                continue
            assert isinstance(item, Batch)
            data = memo.event(follow.key, content_type, item.records, build) if item.records \
                else b""
            yield data + control_of(plan, item.after, item.up_to_date, item.closed)
            if item.closed:
                return
    except StoreUnavailable as outage:  # as a native subscription: the reader resumes
        log.warning("ending a facade event stream of %s: %s", follow.key.run_id, outage)
    finally:
        await release()
