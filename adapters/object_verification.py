"""Streaming verification of an object body against its declared size and SHA-256.

Every object store runs bodies through this, because S3 emulators (and some
gateways) accept wrong checksums: Runnel trusts only what it measured itself.
"""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterable, AsyncIterator

from domain.errors import DigestMismatch, SizeMismatch


async def verified_chunks(body: AsyncIterable[bytes], size: int,
                          sha256: str) -> AsyncIterator[bytes]:
    """Yield the body's chunks; raise (after the last chunk at the latest) if it does not match.

    A body longer than declared is refused as soon as it overflows, so no more
    than `size` bytes are ever accepted.
    """
    digest = hashlib.sha256()
    seen = 0
    async for chunk in body:
        seen += len(chunk)
        if seen > size:
            raise SizeMismatch(f"body exceeds the declared {size} bytes", expected=size,
                               actual=seen)
        digest.update(chunk)
        yield chunk
    if seen != size:
        raise SizeMismatch(f"body has {seen} bytes, {size} were declared", expected=size,
                           actual=seen)
    if digest.hexdigest() != sha256:
        raise DigestMismatch("body digest does not match the declared sha256", expected=sha256,
                             actual=digest.hexdigest())
