"""In-memory object store: bodies in a dict per region, verified like the real ones."""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterable, AsyncIterator
from datetime import UTC, datetime

from adapters.object_verification import verified_chunks
from application.ports.clock import Clock
from application.ports.errors import ObjectRegionUnavailable
from application.ports.objects import ListedObject, ObjectEvidence


class MemoryObjectStore:
    def __init__(self, regions: tuple[str, ...] = ("local",), clock: Clock | None = None) -> None:
        """`clock` stamps each write (for the orphan sweep's grace period); wall time
        without one."""
        self._bodies: dict[str, dict[str, bytes]] = {region: {} for region in regions}
        self._written: dict[tuple[str, str], datetime] = {}
        self._clock = clock

    def serves(self, region: str) -> bool:
        return region in self._bodies

    def _region(self, region: str) -> dict[str, bytes]:
        if region not in self._bodies:
            raise ObjectRegionUnavailable(f"no object store configured for region {region!r}")
        return self._bodies[region]

    async def put(self, region: str, key: str, body: AsyncIterable[bytes], size: int,
                  sha256: str) -> ObjectEvidence:
        bodies = self._region(region)
        parts: list[bytes] = []
        async for chunk in verified_chunks(body, size, sha256):
            parts.append(chunk)
        bodies[key] = b"".join(parts)
        self._written[(region, key)] = (self._clock.now() if self._clock is not None
                                        else datetime.now(UTC))
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

    async def list_objects(self, region: str, prefix: str = "") -> AsyncIterator[ListedObject]:
        bodies = self._region(region)
        for key in sorted(bodies):
            if key.startswith(prefix) and key in bodies:
                yield ListedObject(key, self._written[(region, key)])

    def keys(self, region: str) -> list[str]:
        return sorted(self._region(region))
