"""This node's copy of the revoked-token list: what authentication consults per request.

Rules (ADR 0024):
- `refuses` is two set lookups in memory: no request waits on storage for it;
- the copy is read whole (`RevokedTokens.active`) before the node serves, then every
  `refresh_seconds`, and at once after each ring of the port's doorbell (a revocation
  committed on any node): across nodes a revocation takes effect within one read after
  its ring, and within `refresh_seconds` plus one read when the ring is lost;
- a failed read keeps the last copy and is retried at the next interval or ring;
- the copy holds only unexpired revocations (the port returns no others), so it stays
  as small as the tokens revoked during one maximum token lifetime;
- a principal is refused when its own token id or its parent's (the API token a subscribe
  token was minted from) is revoked;
- every read that changes the copy calls each `on_change` callback, on the loop, so open
  subscriptions end within the same bound as new requests are refused (ADR 0060).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

from application.background import running_in_background
from application.ports.access import RevokedTokens
from application.ports.clock import Clock
from domain.principal import Principal

log = logging.getLogger("runnel.revocations")


class RevocationList:
    def __init__(self) -> None:
        self._revoked: frozenset[tuple[str | None, str]] = frozenset()
        self._rung = asyncio.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._changed: list[Callable[[], None]] = []
        self.reads = 0
        """Reads of the port so far (tests, diagnostics)."""

    def refuses(self, tenant: str, token_id: str | None) -> bool:
        """Whether the token `token_id` of `tenant` is revoked (a token without a `jti`
        cannot be)."""
        revoked = self._revoked
        return token_id is not None and bool(revoked) and (
            (tenant, token_id) in revoked or (None, token_id) in revoked)

    def refuses_principal(self, principal: Principal) -> bool:
        """Whether the principal's token, or the token it was minted from, is revoked."""
        return (self.refuses(principal.tenant, principal.token_id)
                or self.refuses(principal.tenant, principal.parent_token_id))

    def on_change(self, changed: Callable[[], None]) -> None:
        """Call `changed` after every read that changes the copy."""
        self._changed.append(changed)

    async def read(self, revoked: RevokedTokens, clock: Clock) -> None:
        """Replace the copy with what the port holds now."""
        self.reads += 1
        active = await revoked.active(clock.now())
        fresh = frozenset((item.tenant, item.token_id) for item in active)
        if fresh == self._revoked:
            return
        self._revoked = fresh
        for changed in self._changed:
            changed()

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
