"""The object store that holds large bodies, and what it reports."""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol


@dataclass(frozen=True)
class ObjectEvidence:
    """What the object store confirms about a stored body."""

    size: int
    sha256: str


@dataclass(frozen=True)
class ListedObject:
    """A body as the object store lists it."""

    key: str
    modified_at: datetime
    """When the body was written (timezone-aware UTC)."""


class ObjectStore(Protocol):
    """Object bodies, one store per region; keys are always chosen by Runnel.

    `put` streams the body and verifies size and SHA-256 itself (emulators
    accept wrong checksums): on a mismatch it keeps nothing and raises
    `SizeMismatch` / `DigestMismatch`. A region without a configured store
    raises `ObjectRegionUnavailable` (never a silent write elsewhere). A store that cannot
    be reached or fails raises `ObjectStoreUnavailable`. `serves` says, without I/O,
    whether a region has a store here, so a step can be refused before any body moves.
    """

    def serves(self, region: str) -> bool: ...

    async def put(self, region: str, key: str, body: AsyncIterable[bytes], size: int,
                  sha256: str) -> ObjectEvidence: ...

    async def stat(self, region: str, key: str) -> ObjectEvidence | None: ...

    def open(self, region: str, key: str) -> AsyncIterator[bytes]: ...

    async def delete(self, region: str, key: str) -> None:
        """Remove a body; removing an absent one is fine."""
        ...

    def list_objects(self, region: str, prefix: str = "") -> AsyncIterator[ListedObject]:
        """Every complete body in `region` whose key starts with `prefix`, in no promised
        order (a partial upload is never listed); for the orphan sweep."""
        ...
