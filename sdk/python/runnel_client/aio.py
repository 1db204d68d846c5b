"""The asynchronous client.

Shapes: a record submitted is a dict, `{"payload": <JSON>}` or `{"data": <base64>,
"content_type": …}`, with an optional `idempotency_key`; what comes back is a `Record`.
The cursor rule, everywhere: a cursor `c` is the last sequence seen, a read or follow
from `c` returns `sequence > c` ascending, each once; `0` is the beginning.
Every method raises `RunnelError` (its `status` and `code` are the server's problem) for
a refusal, `TokenExpired` / `Unauthenticated` for a 401, and `httpx.TransportError` when
the server cannot be reached (a producer and a follower retry those themselves).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any, Literal, overload

import httpx

from runnel_client.auth import BearerToken, TokenSource
from runnel_client.batching import DEFAULT_BATCH_BYTES
from runnel_client.errors import BackpressureError
from runnel_client.follow_async import follow_async
from runnel_client.following import FollowState, ResyncHandler
from runnel_client.handles import AsyncStream
from runnel_client.objects import DownloadCheck, ObjectBody, measure, object_id_of, prepare_body
from runnel_client.producer import Producer
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

if TYPE_CHECKING:
    from runnel_client.retrying import RetryPolicy

TokenProvider = TokenSource
"""Returns a fresh token (an API token, or a subscribe token of the stream followed)."""


class AsyncRunnelClient:
    """Producer and reader API over HTTP. `token` is a string or a callable (sync or
    async) asked for every request and every reconnect (`runnel_client.auth`)."""

    def __init__(self, base_url: str, token: TokenSource, *, max_backpressure_retries: int = 5,
                 timeout: float = 30.0, http: httpx.AsyncClient | None = None) -> None:
        self._http = http or httpx.AsyncClient(base_url=base_url, timeout=timeout)
        self._auth = BearerToken(token)
        self._http.auth = self._auth
        self._retries = max_backpressure_retries

    async def __aenter__(self) -> AsyncRunnelClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._http.aclose()

    def stream(self, run_id: str, stream_id: str) -> AsyncStream:
        """A handle on one stream: the methods below without the two ids."""
        return AsyncStream(self, run_id, stream_id)

    def producer(self, run_id: str, stream_id: str, *, key_prefix: str, start: int = 0,
                 linger_seconds: float = 0.02, max_batch_bytes: int = DEFAULT_BATCH_BYTES,
                 retry: RetryPolicy | None = None) -> Producer:
        """An idempotent, batching, retrying writer of the stream (`runnel_client.producer`:
        keys `<key_prefix>:<n>` from `start`, raises `AppendFailed` when it gives up)."""
        return Producer(self, run_id, stream_id, key_prefix=key_prefix, start=start,
                        linger_seconds=linger_seconds, max_batch_bytes=max_batch_bytes,
                        retry=retry)

    async def create_stream(self, run_id: str, definition: dict[str, Any]) -> dict[str, Any]:
        """Create (or identically re-create) a stream from its definition (`stream_id` and
        `content_class` required); returns `{run_id, stream_id, definition, status,
        created_at}`. 409 `definition_conflict` for a different definition."""
        return checked(await self._http.post(run_path(run_id, "streams"), json=definition))

    async def get_stream(self, run_id: str, stream_id: str) -> dict[str, Any]:
        """The definition and status, `{…, status: {head, earliest, closed, legal_hold,
        consumers: {id: acked}}}`; 404 `not_found`."""
        return checked(await self._http.get(stream_path(run_id, stream_id)))

    async def append(self, run_id: str, stream_id: str, records: list[dict[str, Any]], *,
                     backpressure_retries: int | None = None) -> dict[str, Any]:
        """Append a batch (1–1000 records) in one transaction; returns `{sequences, head}`
        (a used idempotency key answers its original sequence). A 429 is retried after its
        `Retry-After` up to `backpressure_retries` times (the client's setting by default;
        the same body, so keys hold), then `BackpressureError`. 409 `stream_closed` /
        `quota_exhausted`, 413 `too_large` (a record above 64 KiB: `upload_object`)."""
        retries = self._retries if backpressure_retries is None else backpressure_retries
        for attempt in range(retries + 1):
            response = await self._http.post(stream_path(run_id, stream_id, "records"),
                                             json=records_body(records))
            if response.status_code != 429 or attempt == retries:
                return checked(response)
            error = problem_of(response)
            await asyncio.sleep(error.retry_after if isinstance(error, BackpressureError) else 1.0)
        raise AssertionError("unreachable")

    async def read(self, run_id: str, stream_id: str, after: int = 0,
                   limit: int = 100) -> ReadPage:
        """One page of records with `sequence > after` (`limit` 1–1000); read on from
        `page.next_cursor`. 400 `future_cursor` past the head; `ResyncRequired` (410) when
        retention removed `after + 1`."""
        return ReadPage.from_wire(checked(await self._http.get(
            stream_path(run_id, stream_id, "records"), params={"after": after, "limit": limit})))

    async def ack(self, run_id: str, stream_id: str, consumer_id: str,
                  sequence: int) -> dict[str, Any]:
        """Acknowledge a declared consumer up to `sequence`; returns `{consumer_id, acked}`.
        409 `ack_regression` below its current ack, 400 `ack_beyond_head`, 404
        `consumer_not_found` for an undeclared one."""
        return checked(await self._http.post(
            stream_path(run_id, stream_id, "consumers", consumer_id, "ack"),
            json={"sequence": sequence}))

    async def close_stream(self, run_id: str, stream_id: str) -> dict[str, Any]:
        """Close the stream (idempotent): `{closed: true, head}`; followers end after head."""
        return checked(await self._http.post(stream_path(run_id, stream_id, "close")))

    async def publish_live(self, run_id: str, stream_id: str, chunks: list[Any],
                           source: str | None = None, attempt: int | None = None,
                           index: int | None = None) -> dict[str, Any]:
        """Publish best-effort live chunks (stored nowhere): `{accepted: n}`."""
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

    async def browser_token(self, run_id: str, stream_id: str,
                            ttl_seconds: int | None = None) -> BrowserToken:
        """For a backend: a scoped, short-lived read token to hand a browser, with the
        subscribe URL that takes it (`BrowserToken`). 403/404 when this client may not
        follow the stream; 422 for a `ttl_seconds` outside 1–300."""
        grant = await self.subscribe_token(run_id, stream_id, ttl_seconds)
        url = self._http.base_url.join(stream_path(run_id, stream_id, "subscribe"))
        return BrowserToken(grant["token"], grant["expires_at"],
                            str(url.copy_merge_params({"access_token": grant["token"]})))

    async def upload_object(self, run_id: str, stream_id: str, body: ObjectBody, *,
                            content_type: str = "application/octet-stream",
                            idempotency_key: str | None = None,
                            schema: str | None = None) -> Record:
        """Store a large body (bytes, a path, or a binary file; ≤ 32 MiB) as an object
        record: prepare with its size and SHA-256, stream the upload, commit; returns the
        committed `Record` (`record.object` has `object_id`, `size`, `sha256`, `href`).
        Safe to repeat (`runnel_client.objects`). 413 `too_large`, 422
        `digest_mismatch` / `size_mismatch` if the body changed while it was sent."""
        measured = await asyncio.to_thread(measure, body)
        try:
            prepared = checked(await self._http.post(
                stream_path(run_id, stream_id, "objects"),
                json=prepare_body(measured, content_type, idempotency_key, schema)))
            object_path = stream_path(run_id, stream_id, "objects", prepared["object_id"])
            if prepared.get("state") == "prepared":
                checked(await self._http.put(
                    object_path + "/body", content=_chunks(measured.chunks()),
                    headers={"Content-Length": str(measured.size),
                             "Content-Type": "application/octet-stream"}))
            sequence = int(checked(await self._http.post(object_path + "/commit"))["sequence"])
        finally:
            measured.close()
        return (await self.read(run_id, stream_id, after=sequence - 1, limit=1)).records[0]

    async def download_object(self, run_id: str, stream_id: str,
                              target: Record | str) -> AsyncIterator[bytes]:
        """The body of an object record (the `Record` or its `object_id`), as chunks,
        checked against its size and digest at the end (`download_mismatch`)."""
        object_path = stream_path(run_id, stream_id, "objects", object_id_of(target))
        async with self._http.stream("GET", object_path + "/body") as response:
            if not response.is_success:
                await response.aread()
                raise problem_of(response)
            check = DownloadCheck(_int(response.headers.get("Content-Length")),
                                  response.headers.get("X-Content-SHA256"))
            async for chunk in response.aiter_bytes():
                yield check.update(chunk)
            check.finish()

    @overload
    def follow(self, run_id: str, stream_id: str, after: int = 0, *,
               live: Literal[False] = False, on_resync: ResyncHandler | None = None,
               state: FollowState | None = None, token_provider: TokenProvider | None = None,
               consumer: str | None = None, ack_every: int = 1, wait_for_stream: bool = False,
               start: Literal["tail"] | None = None) -> AsyncIterator[Record]: ...

    @overload
    def follow(self, run_id: str, stream_id: str, after: int = 0, *,
               live: bool, on_resync: ResyncHandler | None = None,
               state: FollowState | None = None, token_provider: TokenProvider | None = None,
               consumer: str | None = None, ack_every: int = 1, wait_for_stream: bool = False,
               start: Literal["tail"] | None = None) -> AsyncIterator[Record | LiveEvent]: ...

    def follow(self, run_id: str, stream_id: str, after: int = 0, *, live: bool = False,
               on_resync: ResyncHandler | None = None, state: FollowState | None = None,
               token_provider: TokenProvider | None = None, consumer: str | None = None,
               ack_every: int = 1, wait_for_stream: bool = False,
               start: Literal["tail"] | None = None) -> AsyncIterator[Record | LiveEvent]:
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
        return follow_async(self, self._http, self._auth, run_id, stream_id, after, live,
                            on_resync, state, token_provider, consumer, ack_every,
                            wait_for_stream, start)



async def _chunks(chunks: Any) -> AsyncIterator[bytes]:
    """A blocking chunk iterator read off the event loop."""
    while True:
        chunk = await asyncio.to_thread(next, chunks, b"")
        if not chunk:
            return
        yield chunk


def _int(value: str | None) -> int | None:
    return int(value) if value is not None and value.isdigit() else None
