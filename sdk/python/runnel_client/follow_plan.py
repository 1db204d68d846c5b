"""The follow loop behind `AsyncRunnelClient.follow` and `RunnelClient.follow`, written
once as a plan (`runnel_client.effects`; its docstring in `runnel_client.surface` has the
rules). What each frame means is `FollowState.accept`'s (`runnel_client.following`);
this is when to (re)subscribe, with which token and cursor, and when to ack."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import httpx

from runnel_client import calls
from runnel_client.auth import BearerToken, TokenSource
from runnel_client.effects import HANGUP, NEXT, Emit, FreshToken, Open, Plan, Sleep
from runnel_client.errors import ResyncRequired, RunnelError, TokenExpired
from runnel_client.following import (
    Acker,
    FollowState,
    Refused,
    ResyncHandler,
    StreamEnded,
    Unavailable,
    backoff,
    refusal,
    start_cursor,
)
from runnel_client.wire import Record, stream_path


@dataclass(frozen=True)
class FollowOptions:
    """`follow()`'s arguments, as its caller gave them."""

    run_id: str
    stream_id: str
    after: int = 0
    live: bool = False
    on_resync: ResyncHandler | None = None
    state: FollowState | None = None
    token_provider: TokenSource | None = None
    consumer: str | None = None
    ack_every: int = 1
    wait_for_stream: bool = False
    start: str | None = None


def follow(options: FollowOptions, client_auth: BearerToken) -> Plan[None]:
    """Emits every record above the cursor once, in order (and live events with `live`),
    across reconnects; returns when the stream ended."""
    after, state = options.after, options.state
    if options.consumer is not None or options.start is not None or options.wait_for_stream:
        info = yield from _stream_info(options)
        after = start_cursor(info["status"], state.cursor if state else after,
                             options.consumer, options.start)
    state = state or FollowState(after)
    state.cursor = max(state.cursor, after)
    acker = Acker(options.ack_every, state.cursor) if options.consumer is not None else None
    subscribe = Open(stream_path(options.run_id, options.stream_id, "subscribe"), sse=True,
                     params={"live": "true"} if options.live else {}, untimed=True)
    provider = (BearerToken(options.token_provider)
                if options.token_provider is not None else None)
    renewable = provider is not None or client_auth.renewable
    auth = BearerToken((yield FreshToken(provider))) if provider else client_auth
    attempt, fresh = 0, True
    while True:
        try:
            response = yield replace(subscribe, headers=state.headers(), auth=auth)
            refusal(response, state.cursor, expired=renewable and not fresh)
            attempt, fresh = 0, False
            while (frame := (yield NEXT)) is not None:
                item = state.accept(frame.event, frame.data)
                if item is None:
                    continue
                yield Emit(item)  # the caller is done with it when the plan goes on
                if acker is not None and isinstance(item, Record):
                    yield from _ack(options, acker, state, acker.passed(item.sequence))
        except Refused as refused:
            raise refused.error from None
        except StreamEnded:
            yield HANGUP
            if acker is not None:
                yield from _ack(options, acker, state, acker.final())
            return
        except TokenExpired:
            if not renewable:
                raise
            yield HANGUP
            if provider is not None:
                auth = BearerToken((yield FreshToken(provider)))
            fresh = True
            state.token_refreshes += 1
            continue  # resume at once from state.cursor, with a fresh token
        except ResyncRequired as resync:
            if options.on_resync is None:
                raise
            state.cursor = options.on_resync(resync)
        except (httpx.TransportError, Unavailable):
            pass  # the server went away or is starting/stopping: reconnect
        yield HANGUP
        attempt += 1
        state.reconnects += 1
        yield Sleep(backoff(attempt))


def _stream_info(options: FollowOptions) -> Plan[dict[str, Any]]:
    """The stream's definition and status; with `wait_for_stream`, a 404 is asked again
    after a backoff."""
    attempt = 0
    while True:
        try:
            return (yield from calls.get_stream(options.run_id, options.stream_id))
        except RunnelError as error:
            if not (options.wait_for_stream and error.status == 404):
                raise
        attempt += 1
        yield Sleep(backoff(attempt))


def _ack(options: FollowOptions, acker: Acker, state: FollowState,
         sequence: int | None) -> Plan[None]:
    if sequence is None or options.consumer is None:
        return
    try:
        yield from calls.ack(options.run_id, options.stream_id, options.consumer, sequence)
    except (RunnelError, httpx.TransportError) as error:
        acker.failed(sequence, error, state)
        return
    acker.acked_up_to(sequence, state)
