"""Stream handles: `client.stream(run_id, stream_id)`, one stream's API without its ids.

Each method is the client's method of the same name (see its docstring for the
shapes it takes and returns, the cursor rule and what it raises) with `run_id` and
`stream_id` filled in. `close()` is the client's `close_stream`; `info()` its
`get_stream`; `create(definition)` its `create_stream`, the `stream_id` put in.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import TYPE_CHECKING, Any

from runnel_client.batching import DEFAULT_BATCH_BYTES
from runnel_client.surface import Handle
from runnel_client.wire import BrowserToken, LiveEvent, ReadPage, Record

if TYPE_CHECKING:
    from runnel_client.aio import AsyncRunnelClient  # noqa: F401 (named in a base class)
    from runnel_client.objects import ObjectBody
    from runnel_client.producer import Producer
    from runnel_client.retrying import RetryPolicy
    from runnel_client.sync import RunnelClient  # noqa: F401 (named in a base class)


class AsyncStream(Handle["AsyncRunnelClient", AsyncIterator[Record],
                         AsyncIterator[Record | LiveEvent]]):
    """The async client's handle (`AsyncRunnelClient.stream`)."""

    async def create(self, definition: dict[str, Any]) -> dict[str, Any]:
        return await self.client.create_stream(
            self.run_id, {**definition, "stream_id": self.stream_id})

    async def info(self) -> dict[str, Any]:
        return await self.client.get_stream(self.run_id, self.stream_id)

    async def append(self, records: list[dict[str, Any]]) -> dict[str, Any]:
        return await self.client.append(self.run_id, self.stream_id, records)

    async def read(self, after: int = 0, limit: int = 100) -> ReadPage:
        return await self.client.read(self.run_id, self.stream_id, after, limit)

    async def ack(self, consumer_id: str, sequence: int) -> dict[str, Any]:
        return await self.client.ack(self.run_id, self.stream_id, consumer_id, sequence)

    async def close(self) -> dict[str, Any]:
        return await self.client.close_stream(self.run_id, self.stream_id)

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


class Stream(Handle["RunnelClient", Iterator[Record], Iterator[Record | LiveEvent]]):
    """The sync client's handle (`RunnelClient.stream`)."""

    def create(self, definition: dict[str, Any]) -> dict[str, Any]:
        return self.client.create_stream(self.run_id, {**definition, "stream_id": self.stream_id})

    def info(self) -> dict[str, Any]:
        return self.client.get_stream(self.run_id, self.stream_id)

    def append(self, records: list[dict[str, Any]]) -> dict[str, Any]:
        return self.client.append(self.run_id, self.stream_id, records)

    def read(self, after: int = 0, limit: int = 100) -> ReadPage:
        return self.client.read(self.run_id, self.stream_id, after, limit)

    def ack(self, consumer_id: str, sequence: int) -> dict[str, Any]:
        return self.client.ack(self.run_id, self.stream_id, consumer_id, sequence)

    def close(self) -> dict[str, Any]:
        return self.client.close_stream(self.run_id, self.stream_id)

    def browser_token(self, ttl_seconds: int | None = None) -> BrowserToken:
        return self.client.browser_token(self.run_id, self.stream_id, ttl_seconds)

    def upload_object(self, body: ObjectBody, *, content_type: str = "application/octet-stream",
                      idempotency_key: str | None = None, schema: str | None = None) -> Record:
        return self.client.upload_object(self.run_id, self.stream_id, body,
                                         content_type=content_type,
                                         idempotency_key=idempotency_key, schema=schema)

    def download_object(self, target: Record | str) -> Iterator[bytes]:
        return self.client.download_object(self.run_id, self.stream_id, target)

