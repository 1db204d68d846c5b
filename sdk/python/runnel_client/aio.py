"""The asynchronous client."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import httpx
from httpx_sse import aconnect_sse

from runnel_client.errors import BackpressureError, ResyncRequired, TokenExpired
from runnel_client.following import FollowState, StreamEnded, Unavailable, backoff
from runnel_client.wire import (
    LiveEvent,
    Record,
    checked,
    problem_of,
    records_body,
    run_path,
    stream_path,
)

ResyncHandler = Callable[[ResyncRequired], int]
TokenProvider = Callable[[], str | Awaitable[str]]
"""Returns a fresh token (an API token, or a subscribe token of the stream followed)."""


async def _fresh_token(provider: TokenProvider) -> str:
    token = provider()
    return await token if inspect.isawaitable(token) else token


class AsyncRunnelClient:
    """Producer and reader API over HTTP. Append honours 429 `Retry-After` with bounded retries."""

    def __init__(self, base_url: str, token: str, *, max_backpressure_retries: int = 5,
                 timeout: float = 30.0, http: httpx.AsyncClient | None = None) -> None:
        self._http = http or httpx.AsyncClient(base_url=base_url, timeout=timeout)
        self._http.headers["Authorization"] = f"Bearer {token}"
        self._retries = max_backpressure_retries

    async def __aenter__(self) -> AsyncRunnelClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._http.aclose()

    async def create_stream(self, run_id: str, definition: dict[str, Any]) -> dict[str, Any]:
        return checked(await self._http.post(run_path(run_id, "streams"), json=definition))

    async def get_stream(self, run_id: str, stream_id: str) -> dict[str, Any]:
        return checked(await self._http.get(stream_path(run_id, stream_id)))

    async def append(self, run_id: str, stream_id: str,
                     records: list[dict[str, Any]]) -> dict[str, Any]:
        """Append a batch; retried on backpressure (same body, so idempotency keys hold)."""
        for attempt in range(self._retries + 1):
            response = await self._http.post(stream_path(run_id, stream_id, "records"),
                                             json=records_body(records))
            if response.status_code != 429 or attempt == self._retries:
                return checked(response)
            error = problem_of(response)
            delay = error.retry_after if isinstance(error, BackpressureError) else 1.0
            await asyncio.sleep(delay)
        raise AssertionError("unreachable")

    async def read(self, run_id: str, stream_id: str, after: int = 0,
                   limit: int = 100) -> dict[str, Any]:
        return checked(await self._http.get(stream_path(run_id, stream_id, "records"),
                                            params={"after": after, "limit": limit}))

    async def ack(self, run_id: str, stream_id: str, consumer_id: str,
                  sequence: int) -> dict[str, Any]:
        return checked(await self._http.post(
            stream_path(run_id, stream_id, "consumers", consumer_id, "ack"),
            json={"sequence": sequence}))

    async def close_stream(self, run_id: str, stream_id: str) -> dict[str, Any]:
        return checked(await self._http.post(stream_path(run_id, stream_id, "close")))

    async def publish_live(self, run_id: str, stream_id: str, chunks: list[Any],
                           source: str | None = None, attempt: int | None = None,
                           index: int | None = None) -> dict[str, Any]:
        body: dict[str, Any] = {"chunks": chunks}
        for name, value in (("source", source), ("attempt", attempt), ("index", index)):
            if value is not None:
                body[name] = value
        return checked(await self._http.post(stream_path(run_id, stream_id, "live"), json=body))

    async def subscribe_token(self, run_id: str, stream_id: str,
                              ttl_seconds: int | None = None) -> dict[str, Any]:
        """A read-only token for this one stream's subscription, `{"token", "expires_at"}`
        (at most 300 s, default 60; never past this client's token)."""
        body = {} if ttl_seconds is None else {"ttl_seconds": ttl_seconds}
        return checked(await self._http.post(
            stream_path(run_id, stream_id, "subscribe-token"), json=body))

    async def follow(self, run_id: str, stream_id: str, after: int = 0, *, live: bool = False,
                     on_resync: ResyncHandler | None = None,
                     state: FollowState | None = None,
                     token_provider: TokenProvider | None = None,
                     ) -> AsyncIterator[Record | LiveEvent]:
        """Every record above `after`, once, in order, across reconnects; ends when the
        stream is closed. On resync, `on_resync` returns the cursor to go on from;
        without it `ResyncRequired` is raised.

        With `live=True` the best-effort live chunks published while following come as
        `LiveEvent`s, under the two-layer rules (ADR 0019, `runnel_client.layers`): a record
        names its step by its `idempotency_key` (`Record.step`); once it arrived, no
        live chunk whose `source` is that step is yielded any more, and a reader showing
        the step's live text drops it. A chunk of an attempt below the newest seen for
        its source is not yielded; the first chunk of a newer attempt has
        `supersedes=True` (drop the earlier attempt's text). `LiveText` keeps what to
        show; `state.live_dropped` counts what the rules dropped.

        The server ends a subscription when its token expires (ADR 0023). With a
        `token_provider` (sync or async, returning an API token or a subscribe token of
        this stream, e.g. from `subscribe_token`), the follower subscribes with its
        tokens, and when one expired it takes a fresh one and resumes at once from the
        last sequence, losing and repeating nothing (`state.token_refreshes` counts
        them). Without one, it uses the client's token and raises `TokenExpired`."""
        state = state or FollowState(after)
        path = stream_path(run_id, stream_id, "subscribe")
        params = {"live": "true"} if live else {}
        attempt = 0
        token = await _fresh_token(token_provider) if token_provider is not None else None
        fresh = True
        while True:
            try:
                async with aconnect_sse(self._http, "GET", path, params=params,
                                        headers=state.headers(token), timeout=None) as source:
                    if source.response.status_code != 200:
                        await source.response.aread()
                        if source.response.status_code >= 500:
                            raise Unavailable
                        error = problem_of(source.response)
                        if error.status == 401 and token_provider is not None and not fresh:
                            raise TokenExpired(state.cursor) from error
                        raise error
                    attempt, fresh = 0, False
                    async for event in source.aiter_sse():
                        item = state.accept(event.event, event.data)
                        if item is not None:
                            yield item
            except StreamEnded:
                return
            except TokenExpired:
                if token_provider is None:
                    raise
                token, fresh = await _fresh_token(token_provider), True
                state.token_refreshes += 1
                continue  # resume at once from state.cursor, with the fresh token
            except ResyncRequired as resync:
                if on_resync is None:
                    raise
                state.cursor = on_resync(resync)
            except (httpx.TransportError, Unavailable):
                pass  # the server went away or is starting/stopping: reconnect
            attempt += 1
            state.reconnects += 1
            await asyncio.sleep(backoff(attempt))
