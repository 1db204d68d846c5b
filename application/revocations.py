"""This node's copy of the revoked-token list: what authentication consults per request.

Rules (ADR 0024):
- `refuses` is two set lookups in memory: no request waits on storage for it;
- the copy is read whole (`RevokedTokens.active`) before the node serves, then every
  `refresh_seconds`, and at once after each ring of the port's doorbell (a revocation
  committed on any node): across nodes a revocation takes effect within one read after
  its ring, and within `refresh_seconds` plus one read when the ring is lost;
- a failed read keeps the last copy and is retried at the next interval or ring;
- the copy holds only unexpired revocations (the port returns no others), so it stays
  as small as the tokens revoked during one maximum token lifetime.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from application.background import running_in_background
from application.ports import Clock, RevokedTokens

log = logging.getLogger("runnel.revocations")


class RevocationList:
    def __init__(self) -> None:
        self._revoked: frozenset[tuple[str | None, str]] = frozenset()
        self._rung = asyncio.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self.reads = 0
        """Reads of the port so far (tests, diagnostics)."""

    def refuses(self, tenant: str, token_id: str | None) -> bool:
        """Whether the token `token_id` of `tenant` is revoked (a token without a `jti`
        cannot be)."""
        revoked = self._revoked
        return token_id is not None and bool(revoked) and (
            (tenant, token_id) in revoked or (None, token_id) in revoked)

    async def read(self, revoked: RevokedTokens, clock: Clock) -> None:
        """Replace the copy with what the port holds now."""
        self.reads += 1
        active = await revoked.active(clock.now())
        self._revoked = frozenset((item.tenant, item.token_id) for item in active)

    @asynccontextmanager
    async def kept_fresh(self, revoked: RevokedTokens, clock: Clock,
                         refresh_seconds: float) -> AsyncIterator[RevocationList]:
        """Read once (raising if that fails: a node must not serve without the list), then
        keep the copy fresh until exit."""
        self._loop = asyncio.get_running_loop()
        revoked.watch(self._ring)
        await self.read(revoked, clock)
        try:
            async with running_in_background(self._refresh(revoked, clock, refresh_seconds),
                                             "runnel-revocations"):
                yield self
        finally:
            self._loop = None

    def _ring(self) -> None:
        loop = self._loop
        if loop is not None:
            loop.call_soon_threadsafe(self._rung.set)

    async def _refresh(self, revoked: RevokedTokens, clock: Clock,
                       refresh_seconds: float) -> None:
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._rung.wait(), refresh_seconds)
            self._rung.clear()
            try:
                await self.read(revoked, clock)
            except Exception as error:  # keep the last copy; the next interval retries
                log.warning("could not read the revoked-token list: %r", error)
