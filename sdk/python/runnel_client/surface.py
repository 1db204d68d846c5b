"""What the sync and async clients and handles share besides their I/O: their
settings and `follow()`, typed once for both (`Client`, `Handle`); the plan of a
follow is performed by each client's driver (`_iterate`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Generic, Literal, TypeVar, overload

import httpx

from runnel_client.auth import BearerToken
from runnel_client.follow_plan import FollowOptions, follow
from runnel_client.run_follow_plan import RunFollowOptions, follow_run

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from runnel_client.auth import TokenSource
    from runnel_client.effects import Plan
    from runnel_client.following import FollowState, ResyncHandler
    from runnel_client.run_following import RunFollowState

RecordsT = TypeVar("RecordsT")
"""What `follow(live=False)` returns: an (async) iterator of `Record`s."""
ItemsT = TypeVar("ItemsT")
"""What `follow(live=True)` returns: an (async) iterator of `Record`s and `LiveEvent`s."""
HttpT = TypeVar("HttpT", httpx.Client, httpx.AsyncClient)
ClientT = TypeVar("ClientT", bound="Client[Any, Any, Any]")


class Client(Generic[HttpT, RecordsT, ItemsT]):
    """The base of `RunnelClient` and `AsyncRunnelClient`: the HTTP client the driver
    uses, the token on it, the backpressure retries, and `follow()`."""

    def __init__(self, http: HttpT, token: TokenSource, max_backpressure_retries: int) -> None:
        self._http: HttpT = http
        self._auth = BearerToken(token)
        self._http.auth = self._auth
        self._retries = max_backpressure_retries

    def _iterate(self, plan: Plan[None]) -> Any:
        """The driver's iterator over what `plan` emits."""
        raise NotImplementedError

    @overload
    def follow(self, run_id: str, stream_id: str, after: int = 0, *,
               live: Literal[False] = False, on_resync: ResyncHandler | None = None,
               state: FollowState | None = None, token_provider: TokenSource | None = None,
               consumer: str | None = None, ack_every: int = 1, wait_for_stream: bool = False,
               start: Literal["tail"] | None = None) -> RecordsT: ...

    @overload
    def follow(self, run_id: str, stream_id: str, after: int = 0, *,
               live: bool, on_resync: ResyncHandler | None = None,
               state: FollowState | None = None, token_provider: TokenSource | None = None,
               consumer: str | None = None, ack_every: int = 1, wait_for_stream: bool = False,
               start: Literal["tail"] | None = None) -> ItemsT: ...

    def follow(self, run_id: str, stream_id: str, after: int = 0, *, live: bool = False,
               on_resync: ResyncHandler | None = None, state: FollowState | None = None,
               token_provider: TokenSource | None = None, consumer: str | None = None,
               ack_every: int = 1, wait_for_stream: bool = False,
               start: Literal["tail"] | None = None) -> Any:
        """Every record above the cursor, once, in order, across reconnects (with
        `Last-Event-ID`) and server restarts; ends when the stream is closed and every
        record was yielded. `live=False` yields `Record`s only.

        Where it starts: `after` (or `state.cursor`); with `consumer="ui"` the
        consumer's acked sequence, if higher, and it acks the consumer as it goes, every
        `ack_every` records the caller is done with (it asked for the next item) and at
        the end, so a restarted follower goes on where the last one stopped, losing
        nothing (repeating at most `ack_every` records); `start="tail"` starts at the
        head, skipping the history. `wait_for_stream=True` waits (backing off up to
        5 s) for a stream that does not exist yet instead of raising 404.

        On resync (410), `on_resync` returns the cursor to go on from; without it
        `ResyncRequired` is raised. With `live=True` the best-effort live chunks come as
        `LiveEvent`s under the two-layer rules (ADR 0019, `runnel_client.layers`).

        The server ends a subscription when its token expires (ADR 0023): with a
        `token_provider`, or a callable client token, the follower takes a fresh token
        and resumes at once from its cursor (`state.token_refreshes`); with a string
        token it raises `TokenExpired` (`last_sequence` is the cursor). A fresh token
        refused at once raises `Unauthenticated`; other refusals (403, 404) are raised,
        transport errors and 5xx reconnect after a jittered backoff."""
        return self._iterate(follow(FollowOptions(
            run_id, stream_id, after, live, on_resync, state, token_provider, consumer,
            ack_every, wait_for_stream, start), self._auth))


    @overload
    def follow_run(self, run_id: str, after: Mapping[str, int] | None = None, *,
                   live: Literal[False] = False, streams: Sequence[str] | None = None,
                   content_class: str | None = None, on_resync: ResyncHandler | None = None,
                   state: RunFollowState | None = None,
                   token_provider: TokenSource | None = None) -> RecordsT: ...

    @overload
    def follow_run(self, run_id: str, after: Mapping[str, int] | None = None, *,
                   live: bool, streams: Sequence[str] | None = None,
                   content_class: str | None = None, on_resync: ResyncHandler | None = None,
                   state: RunFollowState | None = None,
                   token_provider: TokenSource | None = None) -> ItemsT: ...

    def follow_run(self, run_id: str, after: Mapping[str, int] | None = None, *,
                   live: bool = False, streams: Sequence[str] | None = None,
                   content_class: str | None = None, on_resync: ResyncHandler | None = None,
                   state: RunFollowState | None = None,
                   token_provider: TokenSource | None = None) -> Any:
        """Every record of every stream of the run this client may read, streams created
        later included, once each and in its stream's order, as ONE subscription (ADR
        0073); each `Record` (and `LiveEvent`) names its `stream_id`. Ends when the run is
        erased. `after` maps stream ids to the last sequence seen (a stream not named
        starts at its first record); `state.cursor` keeps it across reconnects, which
        resume every stream exactly with the compound cursor. `streams` and
        `content_class` narrow it. A stream's resync (410) asks `on_resync` for that
        stream's cursor (`error.problem["stream_id"]`), else raises `ResyncRequired`;
        tokens, refusals and reconnects are as for `follow`."""
        return self._iterate(follow_run(RunFollowOptions(
            run_id, after, live, streams, content_class, on_resync, state, token_provider),
            self._auth))


class Handle(Generic[ClientT, RecordsT, ItemsT]):
    """A stream handle's ids, and its `follow()`."""

    def __init__(self, client: ClientT, run_id: str, stream_id: str) -> None:
        self.client = client
        self.run_id = run_id
        self.stream_id = stream_id

    @overload
    def follow(self, after: int = 0, *, live: Literal[False] = False,
               on_resync: ResyncHandler | None = None, state: FollowState | None = None,
               token_provider: TokenSource | None = None, consumer: str | None = None,
               ack_every: int = 1, wait_for_stream: bool = False,
               start: Literal["tail"] | None = None) -> RecordsT: ...

    @overload
    def follow(self, after: int = 0, *, live: bool, on_resync: ResyncHandler | None = None,
               state: FollowState | None = None, token_provider: TokenSource | None = None,
               consumer: str | None = None, ack_every: int = 1, wait_for_stream: bool = False,
               start: Literal["tail"] | None = None) -> ItemsT: ...

    def follow(self, after: int = 0, *, live: bool = False,
               on_resync: ResyncHandler | None = None, state: FollowState | None = None,
               token_provider: TokenSource | None = None, consumer: str | None = None,
               ack_every: int = 1, wait_for_stream: bool = False,
               start: Literal["tail"] | None = None) -> Any:
        """The client's `follow` on this stream."""
        return self.client.follow(self.run_id, self.stream_id, after, live=live,
                                  on_resync=on_resync, state=state,
                                  token_provider=token_provider, consumer=consumer,
                                  ack_every=ack_every, wait_for_stream=wait_for_stream,
                                  start=start)
