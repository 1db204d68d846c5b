"""Append a batch of records; read a page of records above a cursor."""

from __future__ import annotations

from typing import Annotated, Any

from litestar import Response
from litestar.di import NamedDependency
from litestar.params import FromPath, JSONBody, QueryParameter

from application.views import envelope_json
from domain.canonical_json import Verbatim
from domain.errors import Backpressure
from entrypoints.http.callers import Caller
from entrypoints.http.handlers.bodies import AppendBody
from entrypoints.http.inputs import check_record_depth, page_limit, read_cursor, wait_seconds
from entrypoints.http.openapi import CursorText, LimitText, WaitText


async def append_records(
    run_id: FromPath[str],
    stream_id: FromPath[str],
    data: JSONBody[AppendBody],
    caller: NamedDependency[Caller],
) -> Response[dict[str, Any]]:
    """Append 1–1000 records in one transaction: consecutive sequences for all, or none.
    A record whose `idempotency_key` was used before gets its original sequence and stores
    nothing, whatever it carries (the first copy stays): `duplicates` lists the positions
    of such records in the batch (from 0); 201 when anything was stored, 200 when every
    record was a duplicate.
    429 `backpressure` (with `Retry-After`) when the unread ceiling is full.
    A `best_effort` stream stores nothing: its records go out as live chunks,
    202 `{"accepted": n}`."""
    check_record_depth(data.records)
    metrics = caller.metrics
    try:
        result = await caller.service.appender.append(caller.principal, run_id, stream_id,
                                                      data.records)
    except Backpressure:
        metrics.backpressure.inc()
        raise
    if result.published:
        metrics.appends.labels(outcome="published").inc()
        return Response({"accepted": result.published}, status_code=202)
    metrics.appends.labels(outcome="duplicate" if result.all_duplicates else "stored").inc()
    return Response({"sequences": list(result.sequences), "head": result.head,
                     "duplicates": list(result.duplicates)},
                    status_code=200 if result.all_duplicates else 201)


async def read_records(
    run_id: FromPath[str],
    stream_id: FromPath[str],
    caller: NamedDependency[Caller],
    after: Annotated[CursorText | None, QueryParameter(
        description="Exclusive cursor: records with sequence > after (default 0).")] = None,
    limit: Annotated[LimitText | None, QueryParameter(
        description="Page size, 1–1000 (default 100).")] = None,
    wait: Annotated[WaitText | None, QueryParameter(
        description="Long-poll: with nothing above the cursor, wait up to this many "
                    "seconds (0–30) for a record or the close.")] = None,
) -> dict[str, Any]:
    """Records above the cursor, ascending and without gaps. 400 `future_cursor` beyond head;
    410 `cursor_pruned` when the record after the cursor was removed by retention. With
    `wait`, an empty page of an open stream waits for a record or the close first."""
    result = await caller.service.reading.read(caller.principal, run_id, stream_id,
                                               read_cursor(after), page_limit(limit),
                                               wait_seconds(wait))
    page = result.page
    return {
        # Each envelope's bytes as SSE sends them, the payloads' stored text unparsed.
        "records": [Verbatim(envelope_json(record, run_id, stream_id)) for record in page.records],
        "next_cursor": result.next_cursor,
        "head": page.head,
        "earliest": page.earliest,
        "closed": page.closed,
    }
