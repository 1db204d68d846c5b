"""SSE live mode: `event: data` per batch, each followed by `event: control` with the next
offset, the cursor, `upToDate` and `streamClosed`; the connection ends after a control
event that says closed, and before the next batch or wait once its token is revoked or
expired (ADR 0060: the protocol has no frame to say why; the reconnect is refused).
Data lines are split on every line break, so a payload can never end an event or start a
forged one."""

from __future__ import annotations

import base64
import json
import re
from collections.abc import AsyncIterator

from entrypoints.http.durable_streams import wire
from entrypoints.http.durable_streams.reads import ReadPlan

_LINE_BREAK = re.compile(r"\r\n|\r|\n")
RECONNECT_SECONDS = 60.0
"""An SSE connection ends about this often so that clients reconnect, as the protocol asks
(ADR 0041)."""


def data_event(text: str) -> bytes:
    lines = _LINE_BREAK.split(text)
    return ("event: data\n" + "".join(data_line(line) for line in lines) + "\n").encode()


def data_line(line: str) -> str:
    """`data:` and the line; a line that starts with a space gets one more, which the
    reader strips (an SSE reader removes one space after the colon)."""
    return f"data: {line}\n" if line.startswith(" ") else f"data:{line}\n"


def control_event(fields: dict[str, object]) -> bytes:
    return f"event: control\ndata:{json.dumps(fields, separators=(',', ':'))}\n\n".encode()


async def sse_frames(plan: ReadPlan, after: int) -> AsyncIterator[bytes]:
    text = wire.is_text(plan.entry.content_type)
    waited = 0.0
    announced = False
    while plan.still_valid(plan.principal):
        page = await plan.page(after)
        records = list(page.records)
        data = b""
        if records:
            body = plan.body(records)
            data = data_event(body.decode() if text else base64.b64encode(body).decode())
            after = records[-1].sequence
        up_to_date = after >= page.head
        closed = page.closed and up_to_date
        if records or not announced or closed:
            control: dict[str, object] = {"streamNextOffset": wire.offset_of(after)}
            if closed:
                control["streamClosed"] = True
                control["upToDate"] = True
            else:
                control["streamCursor"] = plan.cursor()
                if up_to_date:
                    control["upToDate"] = True
            # A batch and its control event leave as one write: a reader that stops at
            # the first `event: control` it sees (the text may hold that line as data)
            # has the real one too.
            yield data + control_event(control)
            announced = True
        if closed or waited >= RECONNECT_SECONDS:
            return
        if up_to_date:
            wait = plan.long_poll_seconds
            if not await plan.streams.wait_beyond(plan.principal, plan.entry, after, wait):
                waited += wait
                yield b": ping\n\n"
