"""The Durable Streams facade's catalog in memory (`FacadeCatalog`), for the memory backend."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime

from application.ports.durable_streams import FacadeEntry
from domain.producer_fencing import ProducerState


class MemoryFacadeCatalog:
    """Implements `FacadeCatalog`."""

    def __init__(self) -> None:
        self._entries: dict[tuple[str, str], FacadeEntry] = {}
        self._producers: dict[tuple[str, str, str], ProducerState] = {}

    async def find(self, tenant: str, path: str) -> FacadeEntry | None:
        return self._entries.get((tenant, path))

    async def insert(self, tenant: str, entry: FacadeEntry) -> FacadeEntry:
        return self._entries.setdefault((tenant, entry.path), entry)

    async def remove(self, tenant: str, path: str, run_id: str) -> bool:
        entry = self._entries.get((tenant, path))
        if entry is None or entry.run_id != run_id:
            return False
        del self._entries[(tenant, path)]
        for key in [key for key in self._producers if key[:2] == (tenant, run_id)]:
            del self._producers[key]
        return True

    async def touch(self, tenant: str, path: str, at: datetime) -> None:
        entry = self._entries.get((tenant, path))
        if entry is not None:
            self._entries[(tenant, path)] = replace(entry, touched_at=at)

    async def set_closed_by(self, tenant: str, path: str, closed_by: str) -> None:
        entry = self._entries.get((tenant, path))
        if entry is not None:
            self._entries[(tenant, path)] = replace(entry, closed_by=closed_by)

    async def mark_deleted(self, tenant: str, path: str) -> None:
        entry = self._entries.get((tenant, path))
        if entry is not None:
            self._entries[(tenant, path)] = replace(entry, deleted=True)

    async def forks_of(self, tenant: str, path: str) -> int:
        return sum(1 for (owner, _), entry in self._entries.items()
                   if owner == tenant and entry.forked_from == path)

    async def expired(self, now: datetime, after: tuple[str, str] | None,
                      limit: int) -> list[tuple[str, FacadeEntry]]:
        found = [(key, entry) for key, entry in self._entries.items()
                 if (after is None or key > after) and not entry.deleted and entry.expired(now)]
        return [(key[0], entry) for key, entry in sorted(found, key=lambda item: item[0])][:limit]

    async def set_writer_seq(self, tenant: str, path: str, writer_seq: str) -> None:
        entry = self._entries.get((tenant, path))
        # Byte order (str order is code point order, which is UTF-8 byte order).
        if entry is not None and (entry.writer_seq is None or entry.writer_seq < writer_seq):
            self._entries[(tenant, path)] = replace(entry, writer_seq=writer_seq)

    async def producer(self, tenant: str, run_id: str,
                       producer_id: str) -> ProducerState | None:
        return self._producers.get((tenant, run_id, producer_id))

    async def save_producer(self, tenant: str, run_id: str, producer_id: str,
                            state: ProducerState) -> None:
        key = (tenant, run_id, producer_id)
        kept = self._producers.get(key)
        if kept is None or (kept.epoch, kept.last_seq) < (state.epoch, state.last_seq):
            self._producers[key] = state
