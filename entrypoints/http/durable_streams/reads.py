"""Catch-up and long-poll reads: a read at offset `o` returns exactly the records after it
(the cursor rule); the body joins them (bytes) or wraps them in one JSON array (JSON).
A long-poll that finds nothing holds one Runnel follow until its first batch, the close,
or the timeout: the records come in the wake, not from a second read (ADR 0071)."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from contextlib import aclosing
from dataclasses import dataclass
from typing import Any

from litestar import Response

from application.durable_streams.facade import DurableStreams
from application.follow_loop import OpenFollow
from application.ports.clock import Clock
from application.ports.durable_streams import FacadeEntry
from application.ports.records import RecordPage, StoredRecord
from domain.principal import Principal
from entrypoints.http.durable_streams import wire
from entrypoints.http.durable_streams.batches import PAGE, Batch, Tick, batches

CACHEABLE = "private, max-age=60, stale-while-revalidate=300"


@dataclass(frozen=True)
class ReadPlan:
    """One read of one stream by one principal, and what the facade lends it: the use
    cases, the clock (for cursors), the long-poll wait and whether the principal may still
    be served (`still_valid`: not revoked, not expired)."""

    streams: DurableStreams
    clock: Clock
    long_poll_seconds: float
    still_valid: Callable[[Principal], bool]
    principal: Principal
    entry: FacadeEntry
    offset: int | str
    echoed_cursor: str | None

    async def start(self) -> int:
        """The sequence the read starts after (`now`: the head)."""
        if self.offset == wire.NOW:
            return (await self.streams.status(self.principal, self.entry)).head
        assert isinstance(self.offset, int)
        return self.offset

    async def page(self, after: int) -> RecordPage:
        return await self.streams.read(self.principal, self.entry, after, PAGE)

    async def follow(self, after: int) -> OpenFollow:
        """The stream's follow from `after`, ending when the principal's credential does."""
        expires_at = self.principal.expires_at
        expires_in = None if expires_at is None else expires_at - time.time()
        return await self.streams.follow(self.principal, self.entry, after, expires_in)

    async def wait(self, after: int) -> RecordPage:
        """At most `long_poll_seconds` for records above `after` or the close; what came
        as a page (empty: nothing came, or the follow ended). Bounded by its own timeout, it
        does not end with the credential, as an SSE connection does: a token in its leeway
        waits out the poll rather than being answered at once, again and again."""
        follow = await self.streams.follow(self.principal, self.entry, after)
        try:
            async with asyncio.timeout(self.long_poll_seconds), aclosing(
                    batches(follow)) as items:
                async for item in items:
                    if isinstance(item, Tick):
                        continue
                    if isinstance(item, Batch):
                        return RecordPage(tuple(item.records), follow.head, 0,
                                          item.closed or follow.closed)
                    break
        except TimeoutError:
            pass
        finally:
            await follow.close()
        return RecordPage((), follow.head, 0, follow.closed)

    def cursor(self) -> str:
        return str(wire.Cursor.next(self.clock.now(), self.echoed_cursor))

    def body(self, records: list[StoredRecord]) -> bytes:
        return render(self.entry.content_type, records)


def render(content_type: str, records: list[StoredRecord]) -> bytes:
    """Bytes joined; JSON: the messages of every record in one array."""
    if wire.is_json(content_type):
        parts = [messages_json(record) for record in records]
        return ("[" + ",".join(part for part in parts if part) + "]").encode()
    return b"".join(record.data or b"" for record in records)


def messages_json(record: StoredRecord) -> str:
    """A record's messages as JSON array elements, without the brackets."""
    payload = record.payload if isinstance(record.payload, list) else [record.payload]
    return ",".join(json.dumps(message, separators=(",", ":"), ensure_ascii=False)
                    for message in payload)


async def read_answer(plan: ReadPlan, long_poll: bool, if_none_match: str | None) -> Response[Any]:
    after = await plan.start()
    page = await plan.page(after)
    if long_poll and not page.records and not page.closed:
        page = await plan.wait(after)
    records = list(page.records)
    end = records[-1].sequence if records else after
    up_to_date = end >= page.head
    headers = {"stream-next-offset": wire.offset_of(end),
               "content-type": plan.entry.content_type}
    if up_to_date:
        headers["stream-up-to-date"] = "true"
    closed = page.closed and up_to_date
    if closed:
        headers["stream-closed"] = "true"
    else:
        headers["stream-cursor"] = plan.cursor()
    if long_poll and not records:
        return Response(None, status_code=204, headers=headers)
    if plan.offset == wire.NOW:
        headers["cache-control"] = "no-store"
    else:
        tag = wire.etag(plan.entry.run_id, after, end, closed)
        headers["etag"] = tag
        headers["cache-control"] = CACHEABLE
        if if_none_match is not None and tag in [part.strip() for part in
                                                 if_none_match.split(",")]:
            return Response(None, status_code=304, headers=headers)
    return Response(plan.body(records), status_code=200, headers=headers,
                    media_type=plan.entry.content_type)
