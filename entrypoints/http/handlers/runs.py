"""List the tenant's runs (ADR 0046)."""

from __future__ import annotations

from typing import Annotated, Any

from litestar.di import NamedDependency
from litestar.params import QueryParameter

from application.views import run_view
from entrypoints.http.callers import Caller
from entrypoints.http.inputs import page_limit


async def list_runs(
    caller: NamedDependency[Caller],
    cursor: Annotated[str | None, QueryParameter(
        description="The `next_cursor` of the previous page (runs after that id).")] = None,
    limit: Annotated[str | None, QueryParameter(
        description="Runs the store reads for this page, 1–1000 (default 100).")] = None,
) -> dict[str, Any]:
    """The runs of the token's tenant that hold a stream, ascending by `run_id`, each with
    its stream count and the creation time of its first stream. Erased runs are left out;
    a token bound to runs sees only those (a page may then hold fewer than `limit` and
    still have a next one). `next_cursor` is null on the last page."""
    listing = await caller.service.run_catalog.list(caller.principal, cursor, page_limit(limit))
    return {"runs": [run_view(run) for run in listing.runs],
            "next_cursor": listing.next_cursor}
