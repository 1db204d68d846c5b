"""Streaming a verified body into S3 without holding it whole in memory.

A body no larger than one part goes up in a single `PutObject` from a buffer
bounded by the declared size; a larger one goes up as a multipart upload of
fixed-size parts. Either way the chunks arrive through `verified_chunks`, which
raises at the latest when the body ends, so:

- a single put is only sent after the whole body was verified;
- a multipart upload is only completed after the whole body was verified, and
  is aborted on any failure, so S3 neither shows an object nor keeps the parts.

Each request carries its own SHA-256 (`ChecksumAlgorithm="SHA256"` plus the
value we computed), so a real S3 rejects a part damaged in transit. The object's
full-body SHA-256 is also stored as the user metadata `sha256`, because a
multipart object's S3 checksum is a checksum of the part checksums.

A request that carries a body waits at most `S3Bounds.deadline` for its size; past it
the call raises `TimeoutError` (an outage to the store, ADR 0050).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
from collections.abc import AsyncGenerator, AsyncIterable
from typing import Any

from adapters.s3.config import S3Bounds

PART_SIZE = 8 * 1024 * 1024
# S3 refuses a non-final part below 5 MiB.
MIN_PART_SIZE = 5 * 1024 * 1024
DIGEST_METADATA = "sha256"


def b64_sha256(hex_digest: str) -> str:
    """S3 wants checksums as base64 of the raw digest, Runnel speaks hex."""
    return base64.b64encode(bytes.fromhex(hex_digest)).decode("ascii")


async def fixed_parts(chunks: AsyncIterable[bytes],
                      part_size: int) -> AsyncGenerator[bytes, None]:
    """Regroup chunks of any size into parts of exactly `part_size` bytes (the last may be
    shorter). At most one part plus one incoming chunk is buffered."""
    buffer = bytearray()
    async for chunk in chunks:
        buffer += chunk
        while len(buffer) >= part_size:
            yield bytes(buffer[:part_size])
            del buffer[:part_size]
    if buffer:
        yield bytes(buffer)


async def put_single(client: Any, bucket: str, key: str, chunks: AsyncIterable[bytes],
                     sha256: str, bounds: S3Bounds) -> None:
    """One `PutObject`; the caller guarantees `chunks` is bounded (verified against a
    declared size no larger than one part)."""
    body = bytearray()
    async for chunk in chunks:
        body += chunk
    async with asyncio.timeout(bounds.deadline(len(body))):
        await client.put_object(Bucket=bucket, Key=key, Body=bytes(body),
                                ChecksumAlgorithm="SHA256", ChecksumSHA256=b64_sha256(sha256),
                                Metadata={DIGEST_METADATA: sha256})


async def put_multipart(client: Any, bucket: str, key: str, chunks: AsyncIterable[bytes],
                        sha256: str, bounds: S3Bounds, part_size: int = PART_SIZE) -> None:
    """A multipart upload that is completed only after every chunk was consumed, and
    aborted on any failure (mismatch, transport error, cancellation)."""
    created = await client.create_multipart_upload(Bucket=bucket, Key=key,
                                                   ChecksumAlgorithm="SHA256",
                                                   Metadata={DIGEST_METADATA: sha256})
    upload_id = created["UploadId"]
    try:
        parts: list[dict[str, Any]] = []
        async with contextlib.aclosing(fixed_parts(chunks, part_size)) as pending:
            async for part in pending:
                number = len(parts) + 1
                checksum = base64.b64encode(hashlib.sha256(part).digest()).decode("ascii")
                async with asyncio.timeout(bounds.deadline(len(part))):
                    response = await client.upload_part(
                        Bucket=bucket, Key=key, UploadId=upload_id, PartNumber=number,
                        Body=part, ChecksumAlgorithm="SHA256", ChecksumSHA256=checksum)
                parts.append({"PartNumber": number, "ETag": response["ETag"],
                              "ChecksumSHA256": checksum})
        async with asyncio.timeout(bounds.deadline(0)):  # a small body of its own
            await client.complete_multipart_upload(Bucket=bucket, Key=key,
                                                   UploadId=upload_id,
                                                   MultipartUpload={"Parts": parts})
    except BaseException:
        # The original failure is what the caller must see; if the abort fails too,
        # the bucket's AbortIncompleteMultipartUpload lifecycle rule collects the parts.
        with contextlib.suppress(Exception):
            await client.abort_multipart_upload(Bucket=bucket, Key=key, UploadId=upload_id)
        raise
