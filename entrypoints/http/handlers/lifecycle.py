"""Close a stream, place or lift a legal hold, delete a stream, erase a run."""

from __future__ import annotations

from typing import Any

from litestar.di import NamedDependency
from litestar.params import FromPath, JSONBody

from entrypoints.http.callers import Caller
from entrypoints.http.handlers.bodies import LegalHoldBody


async def close_stream(
    run_id: FromPath[str],
    stream_id: FromPath[str],
    caller: NamedDependency[Caller],
) -> dict[str, Any]:
    """Close for appends (idempotent). Readers get `event: end` once they have every record."""
    head = await caller.service.lifecycle.close(caller.principal, run_id, stream_id)
    return {"closed": True, "head": head}


async def set_legal_hold(
    run_id: FromPath[str],
    stream_id: FromPath[str],
    data: JSONBody[LegalHoldBody],
    caller: NamedDependency[Caller],
) -> dict[str, Any]:
    """Place (`held: true`) or lift a legal hold; needs `streams:admin`. While held nothing
    of the stream is pruned or deleted."""
    held, reason = await caller.service.lifecycle.set_legal_hold(
        caller.principal, run_id, stream_id, data.held, data.reason)
    return {"held": held, "reason": reason}


async def delete_stream(
    run_id: FromPath[str],
    stream_id: FromPath[str],
    caller: NamedDependency[Caller],
) -> dict[str, Any]:
    """Delete a stream: its records and object bodies go, its id is never reused; for its
    writers and admins; 409 `legal_hold` while held. A repeat answers zero counts."""
    report = await caller.service.stream_deletion.delete(caller.principal, run_id, stream_id)
    return {"run_id": run_id, "stream_id": stream_id, "deleted": True,
            "records_deleted": report.records_deleted,
            "objects_deleted": report.objects_deleted}


async def erase_run(
    run_id: FromPath[str],
    caller: NamedDependency[Caller],
) -> dict[str, Any]:
    """Erase the records and object bodies of every stream of the run that is not under legal
    hold; needs `streams:admin`. Afterwards nothing more is stored in the run (410 `run_erased`)."""
    report = await caller.service.lifecycle.erase_run(caller.principal, run_id)
    return {"streams": report.streams, "records_deleted": report.records_deleted,
            "objects_deleted": report.objects_deleted, "held_streams": report.held_streams,
            "elsewhere": [{"stream_id": stream_id, "metadata_home": home}
                          for stream_id, home in report.elsewhere]}
