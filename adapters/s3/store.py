"""S3 object store: one bucket per region, bodies streamed and verified by Runnel itself."""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import AsyncGenerator, AsyncIterable, AsyncIterator, Iterator, Mapping
from types import TracebackType
from typing import Any, cast

from aiobotocore.config import AioConfig
from aiobotocore.session import AioSession, get_session
from botocore.exceptions import BotoCoreError, ClientError

from adapters.object_verification import verified_chunks
from adapters.s3.config import S3Bounds, S3RegionConfig
from adapters.s3.upload import (
    DIGEST_METADATA,
    MIN_PART_SIZE,
    PART_SIZE,
    put_multipart,
    put_single,
)
from application.ports.errors import ObjectRegionUnavailable, ObjectStoreUnavailable
from application.ports.objects import ListedObject, ObjectEvidence

DOWNLOAD_CHUNK = 64 * 1024
_MISSING_CODES = frozenset({"404", "NoSuchKey", "NotFound"})


def _is_missing(error: ClientError) -> bool:
    return error.response.get("Error", {}).get("Code") in _MISSING_CODES


@contextlib.contextmanager
def _outage_is_unavailable() -> Iterator[None]:
    """S3 unreachable (reset, refused, timed out), silent past its bounds or failing (5xx)
    once botocore's retries are spent is an outage, said as such; a refusal (4xx) stays
    what it is."""
    try:
        yield
    except ClientError as error:
        if error.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0) >= 500:
            raise ObjectStoreUnavailable(f"S3 failed: {error}") from error
        raise
    except BotoCoreError as error:
        raise ObjectStoreUnavailable(f"S3 did not answer: {type(error).__name__}") from error
    except TimeoutError as error:  # a call with a body past its deadline (`S3Bounds`)
        raise ObjectStoreUnavailable("S3 did not answer within the bounds") from error


class S3ObjectStore:
    """The `ObjectStore` port on S3: each configured region maps to its own bucket,
    endpoint and credentials, and a region that is not configured is refused
    (`LookupError`) rather than silently written elsewhere.

    Keys are used exactly as the caller (Runnel) chose them. A body is verified
    while it streams (size and SHA-256, `verified_chunks`); on a mismatch nothing
    is kept: a single put is never sent and a multipart upload is aborted. `stat`
    reports the size S3 holds and the SHA-256 recorded at upload time. S3 unreachable,
    failing or silent past `bounds` raises `ObjectStoreUnavailable`
    (`_outage_is_unavailable`).

    Lifecycle: `async with S3ObjectStore(...)` or `await start()` … `await close()`;
    one aiobotocore client (and connection pool) per region for the process's life.
    """

    def __init__(self, regions: Mapping[str, S3RegionConfig], *, bounds: S3Bounds | None = None,
                 session: AioSession | None = None, part_size: int = PART_SIZE) -> None:
        if not regions:
            raise ValueError("an S3 object store needs at least one region")
        if part_size < MIN_PART_SIZE:
            raise ValueError(f"S3 parts must be at least {MIN_PART_SIZE} bytes")
        places = [(config.endpoint_url, config.bucket) for config in regions.values()]
        if len(set(places)) != len(places):
            # Two regions on one bucket would let a body "placed" in one region be
            # read as present in the other.
            raise ValueError("each region needs its own bucket")
        self._configs = dict(regions)
        self._bounds = bounds or S3Bounds()
        self._session = session or get_session()
        self._part_size = part_size
        self._clients: dict[str, Any] = {}
        self._exit_stack: contextlib.AsyncExitStack | None = None

    async def start(self) -> None:
        if self._exit_stack is not None:
            return
        stack = contextlib.AsyncExitStack()
        try:
            for region, config in self._configs.items():
                self._clients[region] = await stack.enter_async_context(
                    self._session.create_client(
                        "s3",
                        endpoint_url=config.endpoint_url,
                        region_name=config.region_name,
                        aws_access_key_id=config.access_key,
                        aws_secret_access_key=config.secret_key,
                        config=AioConfig(
                            s3={"addressing_style": config.addressing_style},
                            connect_timeout=self._bounds.connect_timeout_seconds,
                            read_timeout=self._bounds.read_timeout_seconds,
                            retries={"mode": "legacy",
                                     "max_attempts": self._bounds.max_attempts}),
                    ))
        except BaseException:
            self._clients.clear()
            await stack.aclose()
            raise
        self._exit_stack = stack

    async def close(self) -> None:
        stack, self._exit_stack = self._exit_stack, None
        self._clients.clear()
        if stack is not None:
            await stack.aclose()

    async def __aenter__(self) -> S3ObjectStore:
        await self.start()
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None,
                        exc: BaseException | None, tb: TracebackType | None) -> None:
        await self.close()

    def serves(self, region: str) -> bool:
        return region in self._configs

    def _target(self, region: str) -> tuple[Any, str]:
        if region not in self._configs:
            raise ObjectRegionUnavailable(f"no object store configured for region {region!r}")
        if self._exit_stack is None:
            raise RuntimeError("S3ObjectStore is not started; use `async with` or start()")
        return self._clients[region], self._configs[region].bucket

    async def ensure_buckets(self) -> None:
        """Create every configured bucket that does not exist yet (development and tests;
        production buckets are provisioned, with an AbortIncompleteMultipartUpload rule)."""
        for region, config in self._configs.items():
            client, bucket = self._target(region)
            try:
                await client.head_bucket(Bucket=bucket)
                continue
            except ClientError as error:
                if not _is_missing(error):
                    raise
            arguments: dict[str, Any] = {"Bucket": bucket}
            if config.region_name != "us-east-1":
                arguments["CreateBucketConfiguration"] = {
                    "LocationConstraint": config.region_name}
            await client.create_bucket(**arguments)

    async def put(self, region: str, key: str, body: AsyncIterable[bytes], size: int,
                  sha256: str) -> ObjectEvidence:
        client, bucket = self._target(region)
        # An async generator in fact: close it at once on failure, not at collection.
        verified = cast(AsyncGenerator[bytes, None], verified_chunks(body, size, sha256))
        async with contextlib.aclosing(verified) as chunks:
            with _outage_is_unavailable():
                await self._put(client, bucket, key, chunks, size, sha256)
        return ObjectEvidence(size, sha256)

    async def _put(self, client: Any, bucket: str, key: str, chunks: AsyncIterable[bytes],
                   size: int, sha256: str) -> None:
        # The declared size picks the path; verification bounds the buffer to it.
        if size <= self._part_size:
            await put_single(client, bucket, key, chunks, sha256, self._bounds)
        else:
            await put_multipart(client, bucket, key, chunks, sha256, self._bounds,
                                self._part_size)

    async def stat(self, region: str, key: str) -> ObjectEvidence | None:
        client, bucket = self._target(region)
        try:
            with _outage_is_unavailable():
                head = await client.head_object(Bucket=bucket, Key=key)
        except ClientError as error:
            if _is_missing(error):
                return None
            raise
        recorded = head.get("Metadata", {}).get(DIGEST_METADATA)
        if recorded is None:
            # Not written by Runnel (or metadata stripped by a copy): measure it.
            recorded = await self._measure(region, key)
            if recorded is None:
                return None
        return ObjectEvidence(int(head["ContentLength"]), recorded)

    async def _measure(self, region: str, key: str) -> str | None:
        digest = hashlib.sha256()
        try:
            async for chunk in self.open(region, key):
                digest.update(chunk)
        except FileNotFoundError:
            return None
        return digest.hexdigest()

    async def open(self, region: str, key: str) -> AsyncIterator[bytes]:
        """Stream a body in chunks; `FileNotFoundError` when there is none."""
        client, bucket = self._target(region)
        try:
            with _outage_is_unavailable():
                response = await client.get_object(Bucket=bucket, Key=key)
        except ClientError as error:
            if _is_missing(error):
                raise FileNotFoundError(key) from error
            raise
        with _outage_is_unavailable():
            async with response["Body"] as stream:
                async for chunk in stream.iter_chunks(DOWNLOAD_CHUNK):
                    yield chunk

    async def delete(self, region: str, key: str) -> None:
        client, bucket = self._target(region)
        # S3 answers 204 for an absent key too, which is what the port wants.
        with _outage_is_unavailable():
            await client.delete_object(Bucket=bucket, Key=key)

    async def list_objects(self, region: str, prefix: str = "") -> AsyncIterator[ListedObject]:
        """Pages through ListObjectsV2 (multipart uploads in flight are not objects yet)."""
        client, bucket = self._target(region)
        paginator = client.get_paginator("list_objects_v2")
        with _outage_is_unavailable():
            async for page in paginator.paginate(Bucket=bucket, Prefix=prefix):
                for entry in page.get("Contents", ()):
                    yield ListedObject(entry["Key"], entry["LastModified"])
