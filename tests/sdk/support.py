"""Helpers for the client tests."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Generic, TypeVar

from tests.http.support import GUARD_SECONDS

T = TypeVar("T")


class Collector(Generic[T]):
    """Drains an async iterator in the background; a test waits for what it needs."""

    def __init__(self, items: AsyncIterator[T]) -> None:
        self.items: list[T] = []
        self._changed = asyncio.Event()
        self.task = asyncio.create_task(self._drain(items))

    async def _drain(self, items: AsyncIterator[T]) -> None:
        try:
            async for item in items:
                self.items.append(item)
                self._changed.set()
        finally:
            self._changed.set()

    async def wait_for(self, condition: Callable[[list[T]], bool]) -> list[T]:
        async with asyncio.timeout(GUARD_SECONDS):
            while not condition(self.items):
                if self.task.done():
                    self.task.result()
                    raise AssertionError(f"the iterator ended early: {self.items}")
                self._changed.clear()
                await self._changed.wait()
        return self.items

    async def finished(self) -> list[T]:
        async with asyncio.timeout(GUARD_SECONDS):
            await self.task
        return self.items

    async def stop(self) -> None:
        self.task.cancel()
        await asyncio.gather(self.task, return_exceptions=True)
