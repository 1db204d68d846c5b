"""The sync follow loop behind `RunnelClient.follow`: `runnel_client.follow_async`, line for
line, with blocking calls (the rules are in `AsyncRunnelClient.follow`'s docstring)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import httpx
from httpx_sse import connect_sse

from runnel_client.auth import BearerToken, TokenSource
from runnel_client.errors import ResyncRequired, RunnelError, TokenExpired
from runnel_client.following import (
    Acker,
    FollowState,
    Refused,
    ResyncHandler,
    StreamEnded,
    Unavailable,
    backoff,
    start_cursor,
)
from runnel_client.wire import LiveEvent, Record, problem_of, stream_path

if TYPE_CHECKING:
    from runnel_client.sync import RunnelClient


def follow_sync(client: RunnelClient, http: httpx.Client, client_auth: BearerToken,
                run_id: str, stream_id: str, after: int, live: bool,
                on_resync: ResyncHandler | None, state: FollowState | None,
                token_provider: TokenSource | None, consumer: str | None,
                ack_every: int, wait_for_stream: bool,
                start: str | None) -> Iterator[Record | LiveEvent]:
    if consumer is not None or start is not None or wait_for_stream:
        status = (_stream_info(client, run_id, stream_id, wait_for_stream))["status"]
        after = start_cursor(status, state.cursor if state else after, consumer, start)
    state = state or FollowState(after)
    state.cursor = max(state.cursor, after)
    acker = Acker(ack_every, state.cursor) if consumer is not None else None
    path = stream_path(run_id, stream_id, "subscribe")
    params = {"live": "true"} if live else {}
    provider = BearerToken(token_provider) if token_provider is not None else None
    renewable = provider is not None or client_auth.renewable
    auth = BearerToken(provider.sync_token()) if provider else client_auth

    def ack(sequence: int | None) -> None:
        if acker is None or consumer is None or sequence is None:
            return
        try:
            client.ack(run_id, stream_id, consumer, sequence)
        except (RunnelError, httpx.TransportError) as error:
            acker.failed(sequence, error, state)
            return
        acker.acked_up_to(sequence, state)

    attempt, fresh = 0, True
    while True:
        try:
            with connect_sse(http, "GET", path, params=params, auth=auth,
                             headers=state.headers(), timeout=None) as source:
                if source.response.status_code != 200:
                    source.response.read()
                    if source.response.status_code >= 500:
                        raise Unavailable
                    error = problem_of(source.response)
                    if error.status == 401 and renewable and not fresh:
                        raise TokenExpired(state.cursor) from error
                    if isinstance(error, ResyncRequired):
                        raise error
                    raise Refused(error, state.cursor)
                attempt, fresh = 0, False
                for event in source.iter_sse():
                    item = state.accept(event.event, event.data)
                    if item is None:
                        continue
                    yield item
                    if acker is not None and isinstance(item, Record):
                        ack(acker.passed(item.sequence))
        except Refused as refused:
            raise refused.error from None
        except StreamEnded:
            ack(acker.final() if acker is not None else None)
            return
        except TokenExpired:
            if not renewable:
                raise
            if provider is not None:
                auth = BearerToken(provider.sync_token())
            fresh = True
            state.token_refreshes += 1
            continue  # resume at once from state.cursor, with a fresh token
        except ResyncRequired as resync:
            if on_resync is None:
                raise
            state.cursor = on_resync(resync)
        except (httpx.TransportError, Unavailable):
            pass  # the server went away or is starting/stopping: reconnect
        attempt += 1
        state.reconnects += 1
        time.sleep(backoff(attempt))


def _stream_info(client: RunnelClient, run_id: str, stream_id: str, wait: bool) -> dict[str, Any]:
    attempt = 0
    while True:
        try:
            return client.get_stream(run_id, stream_id)
        except RunnelError as error:
            if not (wait and error.status == 404):
                raise
        attempt += 1
        time.sleep(backoff(attempt))
