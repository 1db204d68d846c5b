"""The revoked-token list in this process: the `RevokedTokens` contract over a dict.

With `storage=memory` the whole service is one process, so the list is every node's.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime

from application.ports.access import Revocation


class MemoryRevokedTokens:
    """Implements `RevokedTokens`; watchers are rung right after a revocation."""

    def __init__(self) -> None:
        self._revoked: dict[tuple[str, str | None], Revocation] = {}
        self._rings: list[Callable[[], None]] = []

    async def revoke(self, revocation: Revocation, now: datetime) -> None:
        for key, old in list(self._revoked.items()):
            if old.expires_at <= now:
                del self._revoked[key]
        key = (revocation.token_id, revocation.tenant)
        kept = self._revoked.get(key)
        if kept is None or kept.expires_at < revocation.expires_at:
            self._revoked[key] = revocation
        for ring in self._rings:
            ring()

    async def active(self, now: datetime) -> Sequence[Revocation]:
        return [item for item in self._revoked.values() if item.expires_at > now]

    def watch(self, ring: Callable[[], None]) -> None:
        self._rings.append(ring)

    def stored(self) -> int:
        """Revocations kept, expired ones included (tests: pruning)."""
        return len(self._revoked)
