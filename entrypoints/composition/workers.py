"""Background workers hosted by a node (`runnel serve` runs them unless `--no-workers`;
`runnel worker` runs only them).

Each worker is a loop that does one sweep every `RUNNEL_SWEEP_SECONDS` (the
orphan sweep, a full listing of the object stores, every
`RUNNEL_ORPHAN_SWEEP_SECONDS`); a sweep that filled its whole batch runs again at
once (there is a backlog). A failing
sweep is logged and retried on the next tick, never fatal; cancelling the loop
(shutdown) stops it between or inside sweeps, and every sweep is safe to cut
short (claims expire, units of work roll back). Work is claimed through the
ports (leases and row locks in Postgres), so any number of nodes may run the
same workers. The sweeps that walk every stream or every body (retention, the
orphan sweep, storage upkeep, the facade's expiry) run only in the process that leads its region
(`Leadership`, ADR 0032): the others skip them, and take over when the leader dies.
On a node whose region is fenced (ADR 0016) every sweep that would
write is refused; the loops keep running, say so once, and resume by themselves
once the region is unfenced.

Every sweep is measured, by worker name: its duration (failed or not), its
failures, and when the last one succeeded (a fenced sweep is neither; a led sweep
that a follower skips is not measured at all).
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass

from application.durable_streams.expiry import FacadeExpiry
from application.ports.upkeep import Leadership
from application.service import RunnelService
from domain.errors import RegionFenced
from entrypoints.composition.settings import Settings
from entrypoints.observability.metrics import Metrics

log = logging.getLogger("runnel.workers")

BATCH = 100
"""Rows or intents one sweep takes; a sweep that handled this many runs again at once."""

Sweep = Callable[[], Awaitable[int]]


def worker_id() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


@dataclass(frozen=True)
class Worker:
    name: str
    sweep: Sweep
    """One pass; returns how much it handled."""
    batch: int | None
    """A pass that handled this many runs again at once; None: the pass takes everything."""
    seconds: float
    """The pause between passes."""


class NotLeading(Exception):
    """A led sweep skipped by a process that does not lead: neither a sweep nor a failure
    (it is not measured; the leader's figures are the ones that count)."""


def led(leadership: Leadership | None, sweep: Sweep) -> Sweep:
    """`sweep` only while this process leads its region (always without a leadership)."""

    async def if_leading() -> int:
        if leadership is not None and not await leadership.lead():
            raise NotLeading
        return await sweep()

    return if_leading


def workers(service: RunnelService, settings: Settings, me: str,
            leadership: Leadership | None = None,
            expiry: FacadeExpiry | None = None) -> tuple[Worker, ...]:
    tick = settings.sweep_seconds
    regions = settings.object_store_regions()
    loops = [
        Worker("input-dispatch", lambda: service.dispatcher.dispatch_once(me, BATCH), BATCH,
               tick),
        Worker("retention", led(leadership, service.retention.prune_all), None, tick),
        Worker("intent-reaper", lambda: service.intent_reaper.reap_once(BATCH), BATCH, tick),
        # Scans the region's streams for the pin: in the leading process only, as retention.
        Worker("stream-expiry", led(leadership, lambda: service.stream_deletion.expire_once(
            BATCH)), BATCH, tick),
        Worker("body-deletion", lambda: service.body_deleter.delete_once(me, BATCH), BATCH, tick),
        # Lists every body of every region: far less often than the other loops.
        Worker("orphan-sweep", led(leadership, lambda: service.orphan_sweeper.sweep(regions)), None,
               settings.orphan_sweep_seconds),
    ]
    maintenance = service.maintenance
    if maintenance is not None:
        async def upkeep() -> int:
            assert maintenance is not None
            return (await maintenance.run_once()).total

        loops.append(Worker("storage-upkeep", led(leadership, upkeep), None,
                            settings.maintenance_seconds))
    if expiry is not None:
        loops.append(Worker("facade-expiry", led(leadership, expiry.sweep), None, tick))
    return tuple(loops)


async def every(worker: Worker, metrics: Metrics) -> None:
    """Run the worker's sweep forever: again at once after a full batch, else after its
    pause; an error is logged and the loop goes on (a fence once, not every tick)."""
    fenced = False
    duration = metrics.sweep_seconds.labels(worker.name)
    errors = metrics.sweep_errors.labels(worker.name)
    success = metrics.sweep_success.labels(worker.name)
    while True:
        handled = 0
        started = time.perf_counter()
        try:
            handled = await worker.sweep()
        except asyncio.CancelledError:
            raise
        except NotLeading:
            pass
        except RegionFenced as refusal:
            duration.observe(time.perf_counter() - started)
            if not fenced:
                log.warning("worker %s: %s; retrying every tick", worker.name, refusal.detail)
            fenced = True
        except Exception:
            duration.observe(time.perf_counter() - started)
            errors.inc()
            log.exception("worker %s: sweep failed; retrying next tick", worker.name)
        else:
            duration.observe(time.perf_counter() - started)
            success.set(time.time())
            if fenced and handled:  # a sweep with nothing to do may not have met the fence
                log.info("worker %s: writing again (the region's fence was lifted)",
                         worker.name)
                fenced = False
        backlog = worker.batch is not None and handled >= worker.batch
        await asyncio.sleep(0 if backlog else worker.seconds)


@asynccontextmanager
async def background_workers(service: RunnelService, settings: Settings,
                             leadership: Leadership | None = None,
                             metrics: Metrics | None = None,
                             expiry: FacadeExpiry | None = None) -> AsyncIterator[None]:
    """`leadership`: who runs the region-wide sweeps (None: this process always does);
    closed when the workers stop, which hands the lead on. `metrics`: where the sweeps
    are measured (the node's; None: nowhere that is scraped). `expiry`: the Durable
    Streams facade's expiry sweep, where the backend keeps a facade catalog."""
    me = worker_id()
    measured = metrics if metrics is not None else Metrics()
    tasks = [asyncio.create_task(every(worker, measured), name=worker.name)
             for worker in workers(service, settings, me, leadership, expiry)]
    log.info("workers started as %s: %s", me, ", ".join(task.get_name() for task in tasks))
    try:
        yield
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        if leadership is not None:
            await leadership.close()
        log.info("workers stopped")
