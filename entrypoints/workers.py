"""Background workers hosted by a node (`runnel serve` runs them unless `--no-workers`).

Each worker is a loop that does one sweep every `RUNNEL_SWEEP_SECONDS`; a
failing sweep is logged and retried on the next tick, never fatal. Work is
claimed through the ports (leases in Postgres), so any number of nodes may run
the same workers.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

from application.service import RunnelService
from entrypoints.settings import Settings

log = logging.getLogger("runnel.workers")


def worker_id() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


async def _every(seconds: float, name: str, sweep: Callable[[], Awaitable[object]]) -> None:
    while True:
        try:
            await sweep()
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("worker %s: sweep failed; retrying next tick", name)
        await asyncio.sleep(seconds)


@asynccontextmanager
async def background_workers(service: RunnelService, settings: Settings) -> AsyncIterator[None]:
    me = worker_id()
    loops = {
        "input-dispatch": lambda: service.dispatcher.dispatch_once(me),
    }
    tasks = [asyncio.create_task(_every(settings.sweep_seconds, name, sweep), name=name)
             for name, sweep in loops.items()]
    try:
        yield
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
