"""The synchronous client: the same API as the async one, for scripts and workers.

The shapes, the cursor rule and the errors are those of `runnel_client.aio`; each
method's docstring there says what it takes, returns and raises. The sync client has
no `Producer` (linger batching needs a task): batch with `append`.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any, Literal, overload

import httpx
from httpx_sse import connect_sse

from runnel_client.auth import BearerToken, TokenSource
from runnel_client.errors import BackpressureError, ResyncRequired, RunnelError, TokenExpired
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
from runnel_client.handles import Stream
from runnel_client.objects import DownloadCheck, ObjectBody, measure, object_id_of, prepare_body
from runnel_client.wire import (
    BrowserToken,
    LiveEvent,
    ReadPage,
    Record,
    checked,
    problem_of,
    records_body,
    run_path,
    stream_path,
)


class RunnelClient:
    """`token` is a string or a sync callable asked for every request and reconnect."""

    def __init__(self, base_url: str, token: TokenSource, *, max_backpressure_retries: int = 5,
                 timeout: float = 30.0, http: httpx.Client | None = None) -> None:
        self._http = http or httpx.Client(base_url=base_url, timeout=timeout)
        self._auth = BearerToken(token)
        self._http.auth = self._auth
        self._retries = max_backpressure_retries

    def __enter__(self) -> RunnelClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    def stream(self, run_id: str, stream_id: str) -> Stream:
        """A handle on one stream: the methods below without the two ids."""
        return Stream(self, run_id, stream_id)

    def create_stream(self, run_id: str, definition: dict[str, Any]) -> dict[str, Any]:
        return checked(self._http.post(run_path(run_id, "streams"), json=definition))

    def get_stream(self, run_id: str, stream_id: str) -> dict[str, Any]:
        return checked(self._http.get(stream_path(run_id, stream_id)))

    def append(self, run_id: str, stream_id: str, records: list[dict[str, Any]], *,
               backpressure_retries: int | None = None) -> dict[str, Any]:
        retries = self._retries if backpressure_retries is None else backpressure_retries
        for attempt in range(retries + 1):
            response = self._http.post(stream_path(run_id, stream_id, "records"),
                                       json=records_body(records))
            if response.status_code != 429 or attempt == retries:
                return checked(response)
            error = problem_of(response)
            time.sleep(error.retry_after if isinstance(error, BackpressureError) else 1.0)
        raise AssertionError("unreachable")

    def read(self, run_id: str, stream_id: str, after: int = 0, limit: int = 100) -> ReadPage:
        return ReadPage.from_wire(checked(self._http.get(
            stream_path(run_id, stream_id, "records"), params={"after": after, "limit": limit})))

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

    def browser_token(self, run_id: str, stream_id: str,
                      ttl_seconds: int | None = None) -> BrowserToken:
        grant = self.subscribe_token(run_id, stream_id, ttl_seconds)
        url = self._http.base_url.join(stream_path(run_id, stream_id, "subscribe"))
        return BrowserToken(grant["token"], grant["expires_at"],
                            str(url.copy_merge_params({"access_token": grant["token"]})))

    def upload_object(self, run_id: str, stream_id: str, body: ObjectBody, *,
                      content_type: str = "application/octet-stream",
                      idempotency_key: str | None = None, schema: str | None = None) -> Record:
        measured = measure(body)
        try:
            prepared = checked(self._http.post(
                stream_path(run_id, stream_id, "objects"),
                json=prepare_body(measured, content_type, idempotency_key, schema)))
            object_path = stream_path(run_id, stream_id, "objects", prepared["object_id"])
            if prepared.get("state") == "prepared":
                checked(self._http.put(
                    object_path + "/body", content=measured.chunks(),
                    headers={"Content-Length": str(measured.size),
                             "Content-Type": "application/octet-stream"}))
            sequence = int(checked(self._http.post(object_path + "/commit"))["sequence"])
        finally:
            measured.close()
        return self.read(run_id, stream_id, after=sequence - 1, limit=1).records[0]

    def download_object(self, run_id: str, stream_id: str,
                        target: Record | str) -> Iterator[bytes]:
        object_path = stream_path(run_id, stream_id, "objects", object_id_of(target))
        with self._http.stream("GET", object_path + "/body") as response:
            if not response.is_success:
                response.read()
                raise problem_of(response)
            length = response.headers.get("Content-Length")
            check = DownloadCheck(int(length) if length and length.isdigit() else None,
                                  response.headers.get("X-Content-SHA256"))
            for chunk in response.iter_bytes():
                yield check.update(chunk)
            check.finish()

    @overload
    def follow(self, run_id: str, stream_id: str, after: int = 0, *,
               live: Literal[False] = False, on_resync: ResyncHandler | None = None,
               state: FollowState | None = None, token_provider: TokenSource | None = None,
               consumer: str | None = None, ack_every: int = 1, wait_for_stream: bool = False,
               start: Literal["tail"] | None = None) -> Iterator[Record]: ...

    @overload
    def follow(self, run_id: str, stream_id: str, after: int = 0, *,
               live: bool, on_resync: ResyncHandler | None = None,
               state: FollowState | None = None, token_provider: TokenSource | None = None,
               consumer: str | None = None, ack_every: int = 1, wait_for_stream: bool = False,
               start: Literal["tail"] | None = None) -> Iterator[Record | LiveEvent]: ...

    def follow(self, run_id: str, stream_id: str, after: int = 0, *, live: bool = False,
               on_resync: ResyncHandler | None = None, state: FollowState | None = None,
               token_provider: TokenSource | None = None, consumer: str | None = None,
               ack_every: int = 1, wait_for_stream: bool = False,
               start: Literal["tail"] | None = None) -> Iterator[Record | LiveEvent]:
        """As `AsyncRunnelClient.follow` (the same options and rules)."""
        return self._follow(run_id, stream_id, after, live, on_resync, state, token_provider,
                            consumer, ack_every, wait_for_stream, start)

    def _follow(self, run_id: str, stream_id: str, after: int, live: bool,
                on_resync: ResyncHandler | None, state: FollowState | None,
                token_provider: TokenSource | None, consumer: str | None, ack_every: int,
                wait_for_stream: bool, start: str | None) -> Iterator[Record | LiveEvent]:
        if consumer is not None or start is not None or wait_for_stream:
            status = self._await_stream(run_id, stream_id, wait_for_stream)["status"]
            after = start_cursor(status, state.cursor if state else after, consumer, start)
        state = state or FollowState(after)
        state.cursor = max(state.cursor, after)
        acker = Acker(ack_every, state.cursor) if consumer is not None else None
        path = stream_path(run_id, stream_id, "subscribe")
        params = {"live": "true"} if live else {}
        provider = BearerToken(token_provider) if token_provider is not None else None
        renewable = provider is not None or self._auth.renewable
        auth = BearerToken(provider.sync_token()) if provider else self._auth
        attempt, fresh = 0, True
        while True:
            try:
                with connect_sse(self._http, "GET", path, params=params, auth=auth,
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
                            self._ack_due(run_id, stream_id, consumer, acker,
                                          acker.passed(item.sequence), state)
            except Refused as refused:
                raise refused.error from None
            except StreamEnded:
                if acker is not None:
                    self._ack_due(run_id, stream_id, consumer, acker, acker.final(), state)
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

    def _await_stream(self, run_id: str, stream_id: str, wait: bool) -> dict[str, Any]:
        attempt = 0
        while True:
            try:
                return self.get_stream(run_id, stream_id)
            except RunnelError as error:
                if not (wait and error.status == 404):
                    raise
            attempt += 1
            time.sleep(backoff(attempt))

    def _ack_due(self, run_id: str, stream_id: str, consumer: str | None, acker: Acker,
                 sequence: int | None, state: FollowState) -> None:
        if sequence is None or consumer is None:
            return
        try:
            self.ack(run_id, stream_id, consumer, sequence)
        except RunnelError as error:
            if error.code == "ack_regression":  # another follower acked further: fine
                acker.acked = sequence
                return
            if error.status < 500:
                raise
            state.ack_failures += 1
            return
        except httpx.TransportError:
            state.ack_failures += 1
            return
        acker.acked = sequence
        state.acks += 1
