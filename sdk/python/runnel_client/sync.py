"""The synchronous client: the same API as the async one, for scripts and workers.

The shapes, the cursor rule and the errors are those of `runnel_client.aio`; each
method's docstring there says what it takes, returns and raises. The sync client has
no `Producer` (linger batching needs a task): batch with `append`.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx

from runnel_client import calls
from runnel_client.auth import TokenSource
from runnel_client.drive_sync import iterate, run
from runnel_client.effects import Plan
from runnel_client.objects import ObjectBody
from runnel_client.surface import Client, Handle
from runnel_client.wire import BrowserToken, LiveEvent, ReadPage, Record


class RunnelClient(Client[httpx.Client, Iterator[Record], Iterator[Record | LiveEvent]]):
    """`token` is a string or a sync callable asked for every request and reconnect."""

    def __init__(self, base_url: str, token: TokenSource, *, max_backpressure_retries: int = 5,
                 timeout: float = 30.0, http: httpx.Client | None = None) -> None:
        super().__init__(http or httpx.Client(base_url=base_url, timeout=timeout), token,
                         max_backpressure_retries)

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
        """Create (or identically re-create) a stream: `{run_id, stream_id, definition, status,
        created_at}`; 409 `definition_conflict`."""
        return run(self._http, calls.create_stream(run_id, definition))

    def get_stream(self, run_id: str, stream_id: str) -> dict[str, Any]:
        """Definition and status (`status.head`, `status.consumers`, …); 404 `not_found`."""
        return run(self._http, calls.get_stream(run_id, stream_id))

    def append(self, run_id: str, stream_id: str, records: list[dict[str, Any]], *,
               backpressure_retries: int | None = None) -> dict[str, Any]:
        """Append 1–1000 records in one transaction: `{sequences, head}`; a 429 is retried
        after its `Retry-After` (then `BackpressureError`); 409 `stream_closed`, 413
        `too_large` (above 64 KiB: `upload_object`)."""
        retries = self._retries if backpressure_retries is None else backpressure_retries
        return run(self._http, calls.append(run_id, stream_id, records, retries))

    def read(self, run_id: str, stream_id: str, after: int = 0, limit: int = 100, *,
             wait: float | None = None) -> ReadPage:
        """Records with `sequence > after` as a `ReadPage` (read on from `next_cursor`);
        400 `future_cursor`, `ResyncRequired` (410); `wait` long-polls (0–30 s)."""
        return run(self._http, calls.read(run_id, stream_id, after, limit, wait))

    def ack(self, run_id: str, stream_id: str, consumer_id: str, sequence: int) -> dict[str, Any]:
        """`{consumer_id, acked}`; 409 `ack_regression`, 400 `ack_beyond_head`, 404
        `consumer_not_found`."""
        return run(self._http, calls.ack(run_id, stream_id, consumer_id, sequence))

    def close_stream(self, run_id: str, stream_id: str) -> dict[str, Any]:
        """Close (idempotent): `{closed: true, head}`."""
        return run(self._http, calls.close_stream(run_id, stream_id))

    def delete_stream(self, run_id: str, stream_id: str) -> dict[str, Any]:
        """Delete the stream (a writer or an admin): `{run_id, stream_id, deleted, records_deleted,
        objects_deleted}`; 409 `legal_hold`."""
        return run(self._http, calls.delete_stream(run_id, stream_id))

    def subscribe_token(self, run_id: str, stream_id: str,
                        ttl_seconds: int | None = None) -> dict[str, Any]:
        """A read-only token for this one stream's subscription, `{"token", "expires_at"}`
        (at most 300 s, default 60; never past this client's token)."""
        return run(self._http, calls.subscribe_token(run_id, stream_id, ttl_seconds))

    def browser_token(self, run_id: str, stream_id: str,
                      ttl_seconds: int | None = None) -> BrowserToken:
        """A scoped read token for a browser and its subscribe URL (`BrowserToken`)."""
        return run(self._http, calls.browser_token(self._http.base_url, run_id, stream_id,
                                                   ttl_seconds))

    def upload_object(self, run_id: str, stream_id: str, body: ObjectBody, *,
                      content_type: str = "application/octet-stream",
                      idempotency_key: str | None = None, schema: str | None = None) -> Record:
        """Store a body (bytes, a path, a binary file) as an object record and return the
        `Record`; as `AsyncRunnelClient.upload_object`."""
        return run(self._http, calls.upload_object(
            run_id, stream_id, body, content_type, idempotency_key, schema))

    def download_object(self, run_id: str, stream_id: str,
                        target: Record | str) -> Iterator[bytes]:
        """An object record's body as chunks, checked against its size and digest at the
        end (`RunnelError` `download_mismatch`)."""
        return iterate(self._http, calls.download_object(run_id, stream_id, target))

    def _iterate(self, plan: Plan[None]) -> Iterator[Any]:
        return iterate(self._http, plan)


class Stream(Handle[RunnelClient, Iterator[Record], Iterator[Record | LiveEvent]]):
    """The sync client's handle (`RunnelClient.stream`): the client's methods with the
    stream's ids filled in, as `runnel_client.aio.AsyncStream`."""

    def create(self, definition: dict[str, Any]) -> dict[str, Any]:
        return self.client.create_stream(self.run_id, {**definition, "stream_id": self.stream_id})

    def info(self) -> dict[str, Any]:
        return self.client.get_stream(self.run_id, self.stream_id)

    def append(self, records: list[dict[str, Any]]) -> dict[str, Any]:
        return self.client.append(self.run_id, self.stream_id, records)

    def read(self, after: int = 0, limit: int = 100, *, wait: float | None = None) -> ReadPage:
        return self.client.read(self.run_id, self.stream_id, after, limit, wait=wait)

    def ack(self, consumer_id: str, sequence: int) -> dict[str, Any]:
        return self.client.ack(self.run_id, self.stream_id, consumer_id, sequence)

    def close(self) -> dict[str, Any]:
        return self.client.close_stream(self.run_id, self.stream_id)

    def delete(self) -> dict[str, Any]:
        return self.client.delete_stream(self.run_id, self.stream_id)

    def browser_token(self, ttl_seconds: int | None = None) -> BrowserToken:
        return self.client.browser_token(self.run_id, self.stream_id, ttl_seconds)

    def upload_object(self, body: ObjectBody, *, content_type: str = "application/octet-stream",
                      idempotency_key: str | None = None, schema: str | None = None) -> Record:
        return self.client.upload_object(self.run_id, self.stream_id, body,
                                         content_type=content_type,
                                         idempotency_key=idempotency_key, schema=schema)

    def download_object(self, target: Record | str) -> Iterator[bytes]:
        return self.client.download_object(self.run_id, self.stream_id, target)
