"""Use case: list a tenant's runs (ADR 0046), for the console and any client that starts
from nothing but a token."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from application.listing import check_listing_page
from application.ports.clock import Clock
from application.ports.streams import RunSummary, StreamStore
from domain.principal import Principal, Scope


@dataclass(frozen=True)
class RunListing:
    """One page of the tenant's runs, ascending by `run_id`. `next_cursor` is the last run
    id the store read for this page, None when no run comes after it; runs a run-bound
    token may not see are left out, so a page may hold fewer than `limit` (even none)
    and still have a next one."""

    runs: Sequence[RunSummary]
    next_cursor: str | None


class RunCatalog:
    """The runs of the principal's tenant (the token's, never a parameter): the scope of
    listing a run's streams (`streams:read`), erased runs left out, and only the streams
    a stream listing could show the principal counted: not deleted or expired ones (ADR
    0075, 0076), nor those its readers pin keeps from it; a run left with none of them
    is not listed."""

    def __init__(self, store: StreamStore, clock: Clock) -> None:
        self._store = store
        self._clock = clock

    async def list(self, principal: Principal, cursor: str | None,
                   limit: int) -> RunListing:
        principal.require_scope(Scope.READ)
        check_listing_page(cursor, limit)
        # Only the streams a stream listing would show this principal count (`may_read`):
        # an admin's every stream, anyone else's those whose readers pin names them.
        reader = None if principal.is_admin else principal.sub
        read = await self._store.list_runs(principal.tenant, cursor, limit + 1,
                                          self._clock.now(), reader)
        runs, more = read[:limit], len(read) > limit
        bound = principal.runs
        visible = [run for run in runs if bound is None or run.run_id in bound]
        return RunListing(visible, runs[-1].run_id if more else None)
