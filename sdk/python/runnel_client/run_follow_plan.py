"""The run follow loop behind `follow_run` on the sync and async clients, written once
as a plan (`runnel_client.effects`): when to (re)subscribe to the run, with which token
and compound cursor. What each frame means is `RunFollowState.accept`'s
(`runnel_client.run_following`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

import httpx

from runnel_client.auth import BearerToken, TokenSource
from runnel_client.effects import HANGUP, NEXT, Emit, FreshToken, Open, Plan, Sleep
from runnel_client.errors import ResyncRequired, TokenExpired
from runnel_client.following import Refused, ResyncHandler, Unavailable, backoff, refusal
from runnel_client.run_following import RunEnded, RunFollowState
from runnel_client.wire import run_path


@dataclass(frozen=True)
class RunFollowOptions:
    """`follow_run()`'s arguments, as its caller gave them."""

    run_id: str
    after: Mapping[str, int] | None = None
    live: bool = False
    streams: Sequence[str] | None = None
    content_class: str | None = None
    on_resync: ResyncHandler | None = None
    state: RunFollowState | None = None
    token_provider: TokenSource | None = None


def follow_run(options: RunFollowOptions, client_auth: BearerToken) -> Plan[None]:
    """Emits every record of every stream the caller may read once, in its stream's order
    (and live events with `live`), across reconnects; returns when the run is erased."""
    state = options.state or RunFollowState()
    for stream_id, sequence in (options.after or {}).items():
        state.cursor[stream_id] = max(state.cursor.get(stream_id, 0), sequence)
    params = {"live": "true"} if options.live else {}
    if options.streams is not None:
        params["streams"] = ",".join(options.streams)
    if options.content_class is not None:
        params["content_class"] = options.content_class
    subscribe = Open(run_path(options.run_id, "subscribe"), sse=True, params=params,
                     untimed=True)
    provider = (BearerToken(options.token_provider)
                if options.token_provider is not None else None)
    renewable = provider is not None or client_auth.renewable
    auth = BearerToken((yield FreshToken(provider))) if provider else client_auth
    attempt, fresh = 0, True
    while True:
        try:
            response = yield replace(subscribe, headers=state.headers(), auth=auth)
            refusal(response, 0, expired=renewable and not fresh)
            attempt, fresh = 0, False
            while (frame := (yield NEXT)) is not None:
                item = state.accept(frame.event, frame.data)
                if item is not None:
                    yield Emit(item)  # the caller is done with it when the plan goes on
        except Refused as refused:
            raise refused.error from None
        except RunEnded:
            yield HANGUP
            return
        except TokenExpired:
            if not renewable:
                raise
            yield HANGUP
            if provider is not None:
                auth = BearerToken((yield FreshToken(provider)))
            fresh = True
            state.token_refreshes += 1
            continue  # resume at once from the cursor, with a fresh token
        except ResyncRequired as resync:
            if options.on_resync is None:
                raise
            state.cursor[str(resync.problem.get("stream_id"))] = options.on_resync(resync)
        except (httpx.TransportError, Unavailable):
            pass  # the server went away or is starting/stopping: reconnect
        yield HANGUP
        attempt += 1
        state.reconnects += 1
        yield Sleep(backoff(attempt))
