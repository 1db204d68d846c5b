"""Use case: delete the facade's expired streams that nobody looks at any more.

A stream whose TTL or Expires-At has passed is deleted when it is next looked at
(`DurableStreams.find`); one that is never looked at again would keep its records
and its entry for ever. This sweep walks the expired entries of every tenant, a page
at a time, and deletes each as a DELETE would (`DurableStreams.expire`).

Rules: an entry is deleted only if its path still holds the same run and it is still
expired when its turn comes (a read or an append meanwhile renews a TTL; a PUT may have
re-created the path); a stream under legal hold stays, and is listed again on every pass;
a pass ends at the first short page, so entries that expire meanwhile wait for the next.
"""

from __future__ import annotations

from application.durable_streams.facade import DurableStreams
from application.ports.clock import Clock
from application.ports.durable_streams import FacadeCatalog

PAGE = 100
"""Entries one statement lists."""


class FacadeExpiry:
    def __init__(self, streams: DurableStreams, catalog: FacadeCatalog, clock: Clock,
                 page: int = PAGE) -> None:
        self._streams = streams
        self._catalog = catalog
        self._clock = clock
        self._page = page

    async def sweep(self) -> int:
        """One pass over every entry expired at its start; returns how many were deleted."""
        now = self._clock.now()
        deleted = 0
        after: tuple[str, str] | None = None
        while True:
            page = await self._catalog.expired(now, after, self._page)
            for tenant, entry in page:
                deleted += await self._streams.expire(tenant, entry)
            if len(page) < self._page:
                return deleted
            after = (page[-1][0], page[-1][1].path)
