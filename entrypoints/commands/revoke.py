"""`runnel revoke JTI [--tenant T] [--expires-at …]`: put a token on the deny-list.

The revocation goes into the database every node shares; each node hears its NOTIFY
and refuses the token at once, or at the latest after RUNNEL_REVOCATION_REFRESH_SECONDS
(ADR 0024). By default the row is kept for one maximum token lifetime (plus the clock
skew tolerated), which outlives any token the nodes accept today.
"""

from __future__ import annotations

import asyncio
import sys
from datetime import UTC, datetime, timedelta

import asyncpg

from application.ports.access import Revocation
from domain.errors import InvalidIdentifier
from domain.identifiers import validate_id
from entrypoints.auth.tokens import LEEWAY_SECONDS, MAX_TOKEN_ID_LENGTH
from entrypoints.composition.backend import database_url
from entrypoints.composition.settings import Settings


def revoke(settings: Settings, token_id: str, tenant: str | None,
           expires_at: str | None) -> int:
    problem = _problem(settings, token_id, tenant)
    if problem is None:
        now = datetime.now(UTC)
        until = (_instant(expires_at) if expires_at is not None
                 else now + timedelta(seconds=settings.max_token_lifetime_seconds
                                      + LEEWAY_SECONDS))
        if until is None:
            problem = f"--expires-at {expires_at!r} is not an ISO-8601 date and time"
        elif until <= now:
            problem = "--expires-at is in the past: that token is refused as expired anyway"
    if problem is not None:
        print(f"runnel revoke: {problem}", file=sys.stderr)
        return 2
    assert until is not None
    asyncio.run(_revoke(settings, Revocation(token_id, tenant, until), now))
    whose = f"of tenant {tenant}" if tenant is not None else "in every tenant"
    print(f"token {token_id} {whose} revoked until {until.isoformat()}: every node refuses "
          f"it within {settings.revocation_refresh_seconds:g} s")
    return 0


def _problem(settings: Settings, token_id: str, tenant: str | None) -> str | None:
    if settings.storage == "memory":
        return "RUNNEL_STORAGE=memory keeps its deny-list inside the serving process"
    if not 0 < len(token_id) <= MAX_TOKEN_ID_LENGTH:
        return f"a jti has 1 to {MAX_TOKEN_ID_LENGTH} characters"
    if tenant is not None:
        try:
            validate_id(tenant, "tenant")
        except InvalidIdentifier as error:
            return str(error)
    return None


def _instant(text: str) -> datetime | None:
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


async def _revoke(settings: Settings, revocation: Revocation, now: datetime) -> None:
    from adapters.postgres import migrate
    from adapters.postgres.revoked_tokens import PostgresRevokedTokens

    async with database_url(settings) as dsn:
        await migrate(dsn)  # the table may be newer than the nodes that run
        async with asyncpg.create_pool(dsn, min_size=1, max_size=1) as pool:
            await PostgresRevokedTokens(pool).revoke(revocation, now)
