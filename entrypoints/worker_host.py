"""`runnel worker`: the background workers without the HTTP API, until SIGTERM or SIGINT.

Same composition root and settings as `runnel serve`; the workers claim their
work in the shared database, so this process may run beside any number of
API nodes and other workers.
"""

from __future__ import annotations

import asyncio
import signal

from entrypoints.container import Container, running
from entrypoints.settings import Settings
from entrypoints.workers import worker_id

READY = "Runnel workers running as "
"""The line printed once every worker loop runs (tests and supervisors wait for it)."""


async def host_workers(settings: Settings) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    async with running(Container(settings=settings.model_copy(update={"workers": True}))):
        print(f"{READY}{worker_id()}", flush=True)
        await stop.wait()


def run(settings: Settings) -> None:
    """Logging is already set up by the CLI (`logging_setup.py`), as for every command."""
    asyncio.run(host_workers(settings))
