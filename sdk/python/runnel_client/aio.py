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

from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

import httpx

from runnel_client import calls
from runnel_client.auth import TokenSource
from runnel_client.batching import DEFAULT_BATCH_BYTES
from runnel_client.drive_async import iterate, run
from runnel_client.effects import Plan
from runnel_client.objects import ObjectBody
from runnel_client.producer import Producer
from runnel_client.surface import Client, Handle
from runnel_client.wire import BrowserToken, LiveEvent, ReadPage, Record

if TYPE_CHECKING:
    from runnel_client.retrying import RetryPolicy

TokenProvider = TokenSource
"""Returns a fresh token (an API token, or a subscribe token of the stream followed)."""


class AsyncRunnelClient(Client[httpx.AsyncClient, AsyncIterator[Record],
                               AsyncIterator[Record | LiveEvent]]):
    """Producer and reader API over HTTP. `token` is a string or a callable (sync or
    async) asked for every request and every reconnect (`runnel_client.auth`)."""

    def __init__(self, base_url: str, token: TokenSource, *, max_backpressure_retries: int = 5,
                 timeout: float = 30.0, http: httpx.AsyncClient | None = None) -> None:
        super().__init__(http or httpx.AsyncClient(base_url=base_url, timeout=timeout), token,
                         max_backpressure_retries)

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
        return await run(self._http, calls.create_stream(run_id, definition))

    async def get_stream(self, run_id: str, stream_id: str) -> dict[str, Any]:
        """The definition and status, `{…, status: {head, earliest, closed, legal_hold,
        consumers: {id: acked}}}`; 404 `not_found`."""
        return await run(self._http, calls.get_stream(run_id, stream_id))

    async def append(self, run_id: str, stream_id: str, records: list[dict[str, Any]], *,
                     backpressure_retries: int | None = None) -> dict[str, Any]:
        """Append a batch (1–1000 records) in one transaction; returns `{sequences, head}`
        (a used idempotency key answers its original sequence). A 429 is retried after its
        `Retry-After` up to `backpressure_retries` times (the client's setting by default;
        the same body, so keys hold), then `BackpressureError`. 409 `stream_closed` /
        `quota_exhausted`, 413 `too_large` (a record above 64 KiB: `upload_object`)."""
        retries = self._retries if backpressure_retries is None else backpressure_retries
        return await run(self._http, calls.append(run_id, stream_id, records, retries))

    async def read(self, run_id: str, stream_id: str, after: int = 0,
                   limit: int = 100, *, wait: float | None = None) -> ReadPage:
        """One page of records with `sequence > after` (`limit` 1–1000); read on from
        `page.next_cursor`. 400 `future_cursor` past the head; `ResyncRequired` (410) when
        retention removed `after + 1`. `wait` (0–30 s) long-polls: with nothing above
        `after` on an open stream the server answers once a record or the close comes, or
        after `wait` with an empty page (400 `invalid_wait` outside the bound, 429
        `too_many_subscriptions` when the principal's slots are taken)."""
        return await run(self._http, calls.read(run_id, stream_id, after, limit, wait))

    async def ack(self, run_id: str, stream_id: str, consumer_id: str,
                  sequence: int) -> dict[str, Any]:
        """Acknowledge a declared consumer up to `sequence`; returns `{consumer_id, acked}`.
        409 `ack_regression` below its current ack, 400 `ack_beyond_head`, 404
        `consumer_not_found` for an undeclared one."""
        return await run(self._http, calls.ack(run_id, stream_id, consumer_id, sequence))

    async def close_stream(self, run_id: str, stream_id: str) -> dict[str, Any]:
        """Close the stream (idempotent): `{closed: true, head}`; followers end after head."""
        return await run(self._http, calls.close_stream(run_id, stream_id))

    async def delete_stream(self, run_id: str, stream_id: str) -> dict[str, Any]:
        """Delete the stream, its records and bodies (a writer's or an admin's): `{run_id,
        stream_id, deleted: true, records_deleted, objects_deleted}`, zero counts when it
        was deleted before; 409 `legal_hold` while held; its id is never reused (a create
        is 409 `stream_deleted`)."""
        return await run(self._http, calls.delete_stream(run_id, stream_id))

    async def publish_live(self, run_id: str, stream_id: str, chunks: list[Any],
                           source: str | None = None, attempt: int | None = None,
                           index: int | None = None) -> dict[str, Any]:
        """Publish best-effort live chunks (stored nowhere): `{accepted: n}`."""
        return await run(self._http, calls.publish_live(run_id, stream_id, chunks, source,
                                                        attempt, index))

    async def subscribe_token(self, run_id: str, stream_id: str,
                              ttl_seconds: int | None = None) -> dict[str, Any]:
        """A read-only token for this one stream's subscription, `{"token", "expires_at"}`
        (at most 300 s, default 60; never past this client's token)."""
        return await run(self._http, calls.subscribe_token(run_id, stream_id, ttl_seconds))

    async def browser_token(self, run_id: str, stream_id: str,
                            ttl_seconds: int | None = None) -> BrowserToken:
        """For a backend: a scoped, short-lived read token to hand a browser, with the
        subscribe URL that takes it (`BrowserToken`). 403/404 when this client may not
        follow the stream; 422 for a `ttl_seconds` outside 1–300."""
        return await run(self._http, calls.browser_token(self._http.base_url, run_id, stream_id,
                                                         ttl_seconds))

    async def upload_object(self, run_id: str, stream_id: str, body: ObjectBody, *,
                            content_type: str = "application/octet-stream",
                            idempotency_key: str | None = None,
                            schema: str | None = None) -> Record:
        """Store a large body (bytes, a path, or a binary file; ≤ 32 MiB) as an object
        record: prepare with its size and SHA-256, stream the upload, commit; returns the
        committed `Record` (`record.object` has `object_id`, `size`, `sha256`, `href`).
        Safe to repeat (`runnel_client.objects`). 413 `too_large`, 422
        `digest_mismatch` / `size_mismatch` if the body changed while it was sent."""
        return await run(self._http, calls.upload_object(
            run_id, stream_id, body, content_type, idempotency_key, schema))

    def download_object(self, run_id: str, stream_id: str,
                        target: Record | str) -> AsyncIterator[bytes]:
        """The body of an object record (the `Record` or its `object_id`), as chunks,
        checked against its size and digest at the end (`download_mismatch`)."""
        return iterate(self._http, calls.download_object(run_id, stream_id, target))

    def _iterate(self, plan: Plan[None]) -> AsyncIterator[Any]:
        return iterate(self._http, plan)


class AsyncStream(Handle[AsyncRunnelClient, AsyncIterator[Record],
                         AsyncIterator[Record | LiveEvent]]):
    """The async client's handle (`AsyncRunnelClient.stream`): one stream's API without its
    ids. Each method is the client's method of the same name (its docstring says the shapes
    it takes and returns and what it raises) with `run_id` and `stream_id` filled in;
    `close()` is the client's `close_stream`, `info()` its `get_stream`, and
    `create(definition)` its `create_stream` with the `stream_id` put in."""

    async def create(self, definition: dict[str, Any]) -> dict[str, Any]:
        return await self.client.create_stream(
            self.run_id, {**definition, "stream_id": self.stream_id})

    async def info(self) -> dict[str, Any]:
        return await self.client.get_stream(self.run_id, self.stream_id)

    async def append(self, records: list[dict[str, Any]]) -> dict[str, Any]:
        return await self.client.append(self.run_id, self.stream_id, records)

    async def read(self, after: int = 0, limit: int = 100, *,
                   wait: float | None = None) -> ReadPage:
        return await self.client.read(self.run_id, self.stream_id, after, limit, wait=wait)

    async def ack(self, consumer_id: str, sequence: int) -> dict[str, Any]:
        return await self.client.ack(self.run_id, self.stream_id, consumer_id, sequence)

    async def close(self) -> dict[str, Any]:
        return await self.client.close_stream(self.run_id, self.stream_id)

    async def delete(self) -> dict[str, Any]:
        return await self.client.delete_stream(self.run_id, self.stream_id)

    async def publish_live(self, chunks: list[Any], source: str | None = None,
                           attempt: int | None = None, index: int | None = None
                           ) -> dict[str, Any]:
        return await self.client.publish_live(self.run_id, self.stream_id, chunks, source,
                                              attempt, index)

    def producer(self, *, key_prefix: str, start: int = 0, linger_seconds: float = 0.02,
                 max_batch_bytes: int = DEFAULT_BATCH_BYTES,
                 retry: RetryPolicy | None = None) -> Producer:
        return self.client.producer(self.run_id, self.stream_id, key_prefix=key_prefix,
                                    start=start, linger_seconds=linger_seconds,
                                    max_batch_bytes=max_batch_bytes, retry=retry)

    async def browser_token(self, ttl_seconds: int | None = None) -> BrowserToken:
        return await self.client.browser_token(self.run_id, self.stream_id, ttl_seconds)

    async def upload_object(self, body: ObjectBody, *,
                            content_type: str = "application/octet-stream",
                            idempotency_key: str | None = None,
                            schema: str | None = None) -> Record:
        return await self.client.upload_object(self.run_id, self.stream_id, body,
                                               content_type=content_type,
                                               idempotency_key=idempotency_key, schema=schema)

    def download_object(self, target: Record | str) -> AsyncIterator[bytes]:
        return self.client.download_object(self.run_id, self.stream_id, target)
