"""`runnel worker`: the background workers without the HTTP API, until SIGTERM or SIGINT.

Same composition root and settings as `runnel serve`; the workers claim their
work in the shared database, so this process may run beside any number of
API nodes and other workers. Unless `RUNNEL_WORKER_METRICS_PORT` is 0, it serves
its metrics (`metrics_server.py`) on that port; a port it cannot bind refuses the
start in one line.
"""

from __future__ import annotations

import asyncio
import signal
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from entrypoints.composition.container import NodeHost
from entrypoints.composition.settings import Settings
from entrypoints.composition.startup import StartupRefused
from entrypoints.composition.workers import worker_id
from entrypoints.observability.metrics_server import BoundPort, bind_metrics_port
from entrypoints.observability.scrape import scrape

READY = "Runnel workers running as "
"""The line printed once every worker loop runs (tests and supervisors wait for it)."""


async def host_workers(settings: Settings) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    host = NodeHost(settings.model_copy(update={"workers": True}))
    async with _metrics_port(host, settings) as port, host.running():
        served = ""
        if port is not None:
            await port.serve()
            served = f"; metrics at {port.url}/metrics"
        print(f"{READY}{worker_id()}{served}", flush=True)
        try:
            await stop.wait()
        finally:
            if port is not None:  # before the backend closes: no scrape meets it half gone
                await port.close()


@asynccontextmanager
async def _metrics_port(node_host: NodeHost, settings: Settings
                        ) -> AsyncIterator[BoundPort | None]:
    if settings.worker_metrics_port == 0:
        yield None
        return

    async def scrape_now() -> tuple[bytes, str]:
        return await scrape(node_host.metrics, node_host.node.service, node_host.node.backend)

    host, port = settings.worker_metrics_host, settings.worker_metrics_port
    try:
        bound = await bind_metrics_port(scrape_now, host, port)
    except OSError as error:
        raise StartupRefused(f"RUNNEL_WORKER_METRICS_PORT: cannot listen on {host}:{port} "
                             f"({error.strerror or error}); set another port, or 0 for none"
                             ) from None
    try:
        yield bound
    finally:
        await bound.close()


def run(settings: Settings) -> None:
    """Logging is already set up by the CLI (`logging_setup.py`), as for every command."""
    asyncio.run(host_workers(settings))
