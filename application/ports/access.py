"""Who may hold what: subscription slots across nodes and the revoked-token list."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol


class SubscriptionLeases(Protocol):
    """Concurrent-subscription slots of each principal, shared by every node on the same
    storage: one lease per open subscription (ADR 0018).

    - `acquire` takes a slot for the principal `(tenant, sub)` and returns its lease id when
      fewer than `limit` of that principal's leases are live at `now`, else None. A lease is
      live while `now < lease_until`; it is taken until `now + lease_seconds`. Acquires for
      one principal serialize on every node, so acquiring never leaves more than `limit`
      live leases of it.
    - `renew` extends each given lease that is still live at `now` to `now + lease_seconds`
      and returns the ids it extended; a lapsed or released lease is never revived (its slot
      may be someone else's by now).
    - `release` frees a slot at once; releasing an unknown or lapsed lease is fine.

    A holder that dies stops renewing: its slots come back when their leases lapse, without
    anyone cleaning up. `now` is the caller's clock."""

    async def acquire(self, tenant: str, sub: str, limit: int, now: datetime,
                      lease_seconds: float) -> str | None: ...

    async def renew(self, lease_ids: Sequence[str], now: datetime,
                    lease_seconds: float) -> Sequence[str]: ...

    async def release(self, lease_id: str) -> None: ...


@dataclass(frozen=True)
class Revocation:
    """A revoked token id: `tenant` None revokes that `jti` in every tenant. `expires_at` is
    when the token would have expired anyway; after it the revocation may be forgotten."""

    token_id: str
    tenant: str | None
    expires_at: datetime


class RevokedTokens(Protocol):
    """The deny-list of token ids (`jti`), shared by every node on the same storage
    (ADR 0024).

    - `revoke` records a revocation; revoking the same `(token_id, tenant)` again keeps
      the later `expires_at`. It also forgets every revocation whose `expires_at` is at
      or before `now` (the tokens they name are refused as expired anyway).
    - `active` lists every revocation whose `expires_at` is after `now`, in no order.
    - `watch(ring)` has `ring()` called soon after a revocation commits on any node of
      the storage, and whenever one may have been missed (a lost LISTEN connection).
      Rings are hints, like wakes: the watcher re-reads `active`; a lost ring delays,
      and never loses, a revocation. `ring` runs on the event loop and must not block.
    """

    async def revoke(self, revocation: Revocation, now: datetime) -> None: ...

    async def active(self, now: datetime) -> Sequence[Revocation]: ...

    def watch(self, ring: Callable[[], None]) -> None: ...
