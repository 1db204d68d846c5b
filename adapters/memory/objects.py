"""In-memory object store: bodies in a dict per region, verified like the real ones."""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterable, AsyncIterator

from adapters.object_verification import verified_chunks
from application.ports import ObjectEvidence


class MemoryObjectStore:
    def __init__(self, regions: tuple[str, ...] = ("local",)) -> None:
        self._bodies: dict[str, dict[str, bytes]] = {region: {} for region in regions}

    def _region(self, region: str) -> dict[str, bytes]:
        if region not in self._bodies:
            raise LookupError(f"no object store configured for region {region!r}")
        return self._bodies[region]

    async def put(self, region: str, key: str, body: AsyncIterable[bytes], size: int,
                  sha256: str) -> ObjectEvidence:
        bodies = self._region(region)
        parts: list[bytes] = []
        async for chunk in verified_chunks(body, size, sha256):
            parts.append(chunk)
        bodies[key] = b"".join(parts)
        return ObjectEvidence(size, sha256)

    async def stat(self, region: str, key: str) -> ObjectEvidence | None:
        body = self._region(region).get(key)
        if body is None:
            return None
        return ObjectEvidence(len(body), hashlib.sha256(body).hexdigest())

    async def open(self, region: str, key: str) -> AsyncIterator[bytes]:
        body = self._region(region).get(key)
        if body is None:
            raise FileNotFoundError(key)
        for start in range(0, len(body), 65536):
            yield body[start:start + 65536]

    async def delete(self, region: str, key: str) -> None:
        self._region(region).pop(key, None)

    def keys(self, region: str) -> list[str]:
        return sorted(self._region(region))
