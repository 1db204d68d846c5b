"""Mint a subscribe token: the credential a subscription URL may carry (ADR 0023)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from litestar.di import NamedDependency
from litestar.params import FromPath, JSONBody

from entrypoints.http.callers import Minter
from entrypoints.http.handlers.bodies import SubscribeTokenBody


async def mint_subscribe_token(
    run_id: FromPath[str],
    stream_id: FromPath[str],
    caller: NamedDependency[Minter],
    data: JSONBody[SubscribeTokenBody | None] = None,
) -> dict[str, Any]:
    """A read-only token for `?access_token=` on this stream's subscribe route only, for a
    caller that may follow the stream (the same checks as subscribing). It lives
    `ttl_seconds` (1–300, default 60) and never past the caller's own token."""
    body = data or SubscribeTokenBody()
    await caller.service.follower.authorize(caller.principal, run_id, stream_id)
    grant = caller.tokens.mint(caller.principal, run_id, stream_id, body.ttl_seconds)
    return {"token": grant.token,
            "expires_at": datetime.fromtimestamp(grant.expires_at, UTC).isoformat()}
