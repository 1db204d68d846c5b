"""Per-key serialisation inside one process."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator


class KeyedLocks:
    """One asyncio lock per key while anyone holds or awaits it (then it is dropped, so
    the table never outgrows the keys in use)."""

    def __init__(self) -> None:
        self._locks: dict[tuple[str, ...], tuple[asyncio.Lock, int]] = {}

    @contextlib.asynccontextmanager
    async def held(self, key: tuple[str, ...]) -> AsyncIterator[None]:
        lock, users = self._locks.get(key, (asyncio.Lock(), 0))
        self._locks[key] = (lock, users + 1)
        try:
            async with lock:
                yield
        finally:
            lock, users = self._locks[key]
            if users == 1:
                del self._locks[key]
            else:
                self._locks[key] = (lock, users - 1)
