"""Deleting a facade stream (ADR 0041): its run is erased, then its catalog entry goes.

Rules:
- a DELETE erases the run and removes the entry; a stream with forks keeps its entry,
  `deleted`, until its last fork goes (then the removal cascades up the fork chain);
- the run is erased (marked, on every node) before its path stops naming it: an append
  through an entry found before the delete stores nothing (`EntryCache`);
- a stream under legal hold is not deleted (while held, nothing of it is deleted);
- an entry whose stream is gone behind the path (the native DELETE of ADR 0075, a native
  run erase, the expiry pin of ADR 0076) is dropped when a DELETE or a PUT meets it: the
  path is then free, as after a facade DELETE;
- the facade erases only runs of its own making (`RUN_PREFIX`).
"""

from __future__ import annotations

import contextlib
from dataclasses import replace

from application.durable_streams.forks import FACADE_STREAM
from application.ports.durable_streams import FacadeCatalog, FacadeEntry, PathInUse
from application.service import RunnelService
from domain.errors import NotFound
from domain.principal import Principal, Scope

RUN_PREFIX = "ds-"
EXPIRY_SUBJECT = "runnel:facade-expiry"


async def delete_entry(service: RunnelService, catalog: FacadeCatalog, principal: Principal,
                       entry: FacadeEntry) -> None:
    """Erase the run and drop the entry (`drop_entry`), for a writer, never under legal
    hold. An entry whose stream is gone behind it (deleted or erased through the native
    API, or past its expiry pin) is dropped all the same, and the DELETE is a 404."""
    try:
        stream = await service.definitions.get_for_writing(principal, entry.run_id,
                                                           FACADE_STREAM)
    except NotFound:
        await drop_entry(service, catalog, upkeep(principal.tenant), entry)
        raise
    if stream.legal_hold:
        raise PathInUse("the stream is under legal hold")
    await drop_entry(service, catalog, principal, entry)


async def drop_entry(service: RunnelService, catalog: FacadeCatalog, principal: Principal,
                     entry: FacadeEntry) -> None:
    """Erase the run; drop the entry unless forks of it remain; then drop every deleted
    source up the chain that this left without forks."""
    await erase_run(service, principal, entry.run_id)
    if await catalog.forks_of(principal.tenant, entry.path):
        await catalog.mark_deleted(principal.tenant, entry.path)
        return
    await catalog.remove(principal.tenant, entry.path, entry.run_id)
    source_path = entry.forked_from
    while source_path is not None:
        source = await catalog.find(principal.tenant, source_path)
        if (source is None or not source.deleted
                or await catalog.forks_of(principal.tenant, source_path)):
            return
        await catalog.remove(principal.tenant, source.path, source.run_id)
        source_path = source.forked_from


async def erase_run(service: RunnelService, principal: Principal, run_id: str) -> None:
    """For a principal that may write the stream: that is what the protocol's DELETE asks."""
    assert run_id.startswith(RUN_PREFIX)
    admin = replace(principal, scopes=principal.scopes | {Scope.ADMIN.value})
    with contextlib.suppress(NotFound):  # erased before (a deleted source of forks)
        await service.lifecycle.erase_run(admin, run_id)


def upkeep(tenant: str) -> Principal:
    """Who deletes an expired stream: the facade, as the tenant's admin (whoever looked)."""
    return Principal(sub=EXPIRY_SUBJECT, tenant=tenant, scopes=frozenset({Scope.ADMIN.value}))
