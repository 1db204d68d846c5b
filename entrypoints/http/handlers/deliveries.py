"""Read an input stream's deliveries (ADR 0046) and re-drive its dead letters (ADR 0057)."""

from __future__ import annotations

from typing import Any

from litestar.di import NamedDependency
from litestar.params import FromPath, JSONBody

from application.views import dead_letter_view, redrive_view
from entrypoints.http.callers import Caller
from entrypoints.http.handlers.bodies import RedriveBody


async def get_deliveries(
    run_id: FromPath[str],
    stream_id: FromPath[str],
    caller: NamedDependency[Caller],
) -> dict[str, Any]:
    """An input stream's outbox, read-only: `pending` input records not yet handed to the
    workflow's wait service, its `dead_letters` (the first 100 by sequence, with their
    attempts and last error; `dead_letter_count` counts them all), and its latest 20
    `redrives` (newest first: who put which dead letters back, when). An output stream
    has none."""
    report = await caller.service.delivery_inspection.report(caller.principal, run_id, stream_id)
    return {"run_id": run_id, "stream_id": stream_id, "direction": report.direction,
            "pending": report.pending, "dead_letter_count": report.dead_letter_count,
            "dead_letters": [dead_letter_view(delivery) for delivery in report.dead_letters],
            "redrives": [redrive_view(redrive) for redrive in report.redrives]}


async def redrive_dead_letters(
    run_id: FromPath[str],
    stream_id: FromPath[str],
    data: JSONBody[RedriveBody],
    caller: NamedDependency[Caller],
) -> dict[str, Any]:
    """Put dead letters of an input stream back in line, pending with no attempt spent;
    needs `streams:admin`. Each is the stream's next delivery: records behind it not yet
    delivered wait for it. `not_dead` lists asked-for sequences that are not dead letters
    (left alone), `not_retained` dead letters whose record retention pruned (left dead).
    What was re-driven is recorded under the token's subject in the deliveries view. An
    output stream is 409 `not_an_input_stream`."""
    report = await caller.service.redrive.redrive(caller.principal, run_id, stream_id,
                                                  data.sequences)
    return {"run_id": run_id, "stream_id": stream_id, "redriven": list(report.redriven),
            "not_dead": list(report.not_dead), "not_retained": list(report.not_retained),
            "dead_letter_count": report.dead_letter_count}
