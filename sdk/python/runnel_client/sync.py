"""The synchronous client: the same API as the async one, for scripts and workers."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import httpx
from httpx_sse import connect_sse

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


class RunnelClient:
    def __init__(self, base_url: str, token: str, *, max_backpressure_retries: int = 5,
                 timeout: float = 30.0, http: httpx.Client | None = None) -> None:
        self._http = http or httpx.Client(base_url=base_url, timeout=timeout)
        self._http.headers["Authorization"] = f"Bearer {token}"
        self._retries = max_backpressure_retries

    def __enter__(self) -> RunnelClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    def create_stream(self, run_id: str, definition: dict[str, Any]) -> dict[str, Any]:
        return checked(self._http.post(run_path(run_id, "streams"), json=definition))

    def get_stream(self, run_id: str, stream_id: str) -> dict[str, Any]:
        return checked(self._http.get(stream_path(run_id, stream_id)))

    def append(self, run_id: str, stream_id: str,
               records: list[dict[str, Any]]) -> dict[str, Any]:
        for attempt in range(self._retries + 1):
            response = self._http.post(stream_path(run_id, stream_id, "records"),
                                       json=records_body(records))
            if response.status_code != 429 or attempt == self._retries:
                return checked(response)
            error = problem_of(response)
            time.sleep(error.retry_after if isinstance(error, BackpressureError) else 1.0)
        raise AssertionError("unreachable")

    def read(self, run_id: str, stream_id: str, after: int = 0,
             limit: int = 100) -> dict[str, Any]:
        return checked(self._http.get(stream_path(run_id, stream_id, "records"),
                                      params={"after": after, "limit": limit}))

    def ack(self, run_id: str, stream_id: str, consumer_id: str, sequence: int) -> dict[str, Any]:
        return checked(self._http.post(
            stream_path(run_id, stream_id, "consumers", consumer_id, "ack"),
            json={"sequence": sequence}))

    def close_stream(self, run_id: str, stream_id: str) -> dict[str, Any]:
        return checked(self._http.post(stream_path(run_id, stream_id, "close")))

    def subscribe_token(self, run_id: str, stream_id: str,
                        ttl_seconds: int | None = None) -> dict[str, Any]:
        """A read-only token for this one stream's subscription, `{"token", "expires_at"}`
        (at most 300 s, default 60; never past this client's token)."""
        body = {} if ttl_seconds is None else {"ttl_seconds": ttl_seconds}
        return checked(self._http.post(stream_path(run_id, stream_id, "subscribe-token"),
                                       json=body))

    def follow(self, run_id: str, stream_id: str, after: int = 0, *, live: bool = False,
               on_resync: Callable[[ResyncRequired], int] | None = None,
               state: FollowState | None = None,
               token_provider: Callable[[], str] | None = None) -> Iterator[Record | LiveEvent]:
        """As `AsyncRunnelClient.follow`: every record once, in order, across reconnects,
        and with `live=True` the live chunks under the two-layer rules (ADR 0019): none
        of a step (`source`) whose record (`idempotency_key` = the step) arrived, none of
        an attempt older than the newest seen for its step. `token_provider` returns a
        fresh token whenever the subscription's token expired (see the async client)."""
        state = state or FollowState(after)
        path = stream_path(run_id, stream_id, "subscribe")
        params = {"live": "true"} if live else {}
        attempt = 0
        token = token_provider() if token_provider is not None else None
        fresh = True
        while True:
            try:
                with connect_sse(self._http, "GET", path, params=params,
                                 headers=state.headers(token), timeout=None) as source:
                    if source.response.status_code != 200:
                        source.response.read()
                        if source.response.status_code >= 500:
                            raise Unavailable
                        error = problem_of(source.response)
                        if error.status == 401 and token_provider is not None and not fresh:
                            raise TokenExpired(state.cursor) from error
                        raise error
                    attempt, fresh = 0, False
                    for event in source.iter_sse():
                        item = state.accept(event.event, event.data)
                        if item is not None:
                            yield item
            except StreamEnded:
                return
            except TokenExpired:
                if token_provider is None:
                    raise
                token, fresh = token_provider(), True
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
            time.sleep(backoff(attempt))
