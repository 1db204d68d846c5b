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

from runnel_client.auth import BearerToken, TokenSource
from runnel_client.errors import BackpressureError
from runnel_client.follow_sync import follow_sync
from runnel_client.following import FollowState, ResyncHandler
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
        """Create (or identically re-create) a stream: `{run_id, stream_id, definition, status,
        created_at}`; 409 `definition_conflict`."""
        return checked(self._http.post(run_path(run_id, "streams"), json=definition))

    def get_stream(self, run_id: str, stream_id: str) -> dict[str, Any]:
        """Definition and status (`status.head`, `status.consumers`, …); 404 `not_found`."""
        return checked(self._http.get(stream_path(run_id, stream_id)))

    def append(self, run_id: str, stream_id: str, records: list[dict[str, Any]], *,
               backpressure_retries: int | None = None) -> dict[str, Any]:
        """Append 1–1000 records in one transaction: `{sequences, head}`; a 429 is retried
        after its `Retry-After` (then `BackpressureError`); 409 `stream_closed`, 413
        `too_large` (above 64 KiB: `upload_object`)."""
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
        """Records with `sequence > after` as a `ReadPage` (read on from `next_cursor`);
        400 `future_cursor`, `ResyncRequired` (410)."""
        return ReadPage.from_wire(checked(self._http.get(
            stream_path(run_id, stream_id, "records"), params={"after": after, "limit": limit})))

    def ack(self, run_id: str, stream_id: str, consumer_id: str, sequence: int) -> dict[str, Any]:
        """`{consumer_id, acked}`; 409 `ack_regression`, 400 `ack_beyond_head`, 404
        `consumer_not_found`."""
        return checked(self._http.post(
            stream_path(run_id, stream_id, "consumers", consumer_id, "ack"),
            json={"sequence": sequence}))

    def close_stream(self, run_id: str, stream_id: str) -> dict[str, Any]:
        """Close (idempotent): `{closed: true, head}`."""
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
        """A scoped read token for a browser and its subscribe URL (`BrowserToken`)."""
        grant = self.subscribe_token(run_id, stream_id, ttl_seconds)
        url = self._http.base_url.join(stream_path(run_id, stream_id, "subscribe"))
        return BrowserToken(grant["token"], grant["expires_at"],
                            str(url.copy_merge_params({"access_token": grant["token"]})))

    def upload_object(self, run_id: str, stream_id: str, body: ObjectBody, *,
                      content_type: str = "application/octet-stream",
                      idempotency_key: str | None = None, schema: str | None = None) -> Record:
        """Store a body (bytes, a path, a binary file) as an object record and return the
        `Record`; as `AsyncRunnelClient.upload_object`."""
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
        """An object record's body as chunks, checked against its size and digest at the
        end (`RunnelError` `download_mismatch`)."""
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
        return follow_sync(self, self._http, self._auth, run_id, stream_id, after, live,
                           on_resync, state, token_provider, consumer, ack_every,
                           wait_for_stream, start)
