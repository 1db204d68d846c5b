"""The revoked-token list in Postgres: the `RevokedTokens` contract for every node.

Rules:
- a revocation, the pruning of expired ones and its NOTIFY on `runnel_revoked` commit in
  one transaction, so a node rung by the NOTIFY reads the revocation;
- the NOTIFY carries nothing: it is a doorbell, the watcher re-reads the whole list;
- the process's one LISTEN connection (`PostgresWakeBus`) hears the doorbell and rings
  this adapter, also after each reconnect (a NOTIFY may have been missed meanwhile);
  an adapter on a process without a listener (the CLI) is never rung;
- `tenant` None is stored as '' (no tenant id is empty).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime

import asyncpg

from application.ports.access import Revocation

REVOKED_CHANNEL = "runnel_revoked"

_PRUNE = "DELETE FROM revoked_tokens WHERE expires_at <= $1"

_REVOKE = """
INSERT INTO revoked_tokens (jti, tenant, expires_at) VALUES ($1, $2, $3)
ON CONFLICT (jti, tenant) DO UPDATE
SET expires_at = GREATEST(revoked_tokens.expires_at, EXCLUDED.expires_at)
"""

_ACTIVE = "SELECT jti, tenant, expires_at FROM revoked_tokens WHERE expires_at > $1"


class PostgresRevokedTokens:
    """Implements `RevokedTokens`."""

    def __init__(self, pool: asyncpg.Pool) -> None:
        self._pool = pool
        self._rings: list[Callable[[], None]] = []

    async def revoke(self, revocation: Revocation, now: datetime) -> None:
        async with self._pool.acquire() as connection, connection.transaction():
            await connection.execute(_PRUNE, now)
            await connection.execute(_REVOKE, revocation.token_id, revocation.tenant or "",
                                     revocation.expires_at)
            await connection.execute("SELECT pg_notify($1, '')", REVOKED_CHANNEL)

    async def active(self, now: datetime) -> Sequence[Revocation]:
        rows = await self._pool.fetch(_ACTIVE, now)
        return [Revocation(row["jti"], row["tenant"] or None, row["expires_at"])
                for row in rows]

    def watch(self, ring: Callable[[], None]) -> None:
        self._rings.append(ring)

    def ring(self) -> None:
        """Called by the LISTEN connection on each NOTIFY, and after each reconnect."""
        for ring in self._rings:
            ring()
