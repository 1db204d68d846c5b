"""Acknowledge a consumer's progress (it feeds the producer's credit)."""

from __future__ import annotations

from typing import Any

from litestar.di import NamedDependency
from litestar.params import FromPath, JSONBody

from entrypoints.http.callers import Caller
from entrypoints.http.handlers.bodies import AckBody


async def ack(
    run_id: FromPath[str],
    stream_id: FromPath[str],
    consumer_id: FromPath[str],
    data: JSONBody[AckBody],
    caller: NamedDependency[Caller],
) -> dict[str, Any]:
    """Acks only advance: below the current ack is 409 `ack_regression`, beyond head 400
    `ack_beyond_head`; re-acking the current value is 200. Only declared consumers exist
    (404 `consumer_not_found`); one whose declaration pins principals refuses any other
    (403 `consumer_scope`)."""
    result = await caller.service.acknowledger.ack(caller.principal, run_id, stream_id, consumer_id,
                                           data.sequence)
    return {"consumer_id": result.consumer_id, "acked": result.acked}
