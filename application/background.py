"""A coroutine that runs for as long as a context is open."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Coroutine
from contextlib import asynccontextmanager
from typing import Any


@asynccontextmanager
async def running_in_background(work: Coroutine[Any, Any, Any], name: str
                                ) -> AsyncIterator[asyncio.Task[Any]]:
    """Start `work` as a task; on exit, cancel it and wait until it has stopped."""
    task = asyncio.create_task(work, name=name)
    try:
        yield task
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
