"""The catalog entries a process's plain appends last found, by tenant and path (ADR 0071).

Rules:
- only a plain append (records alone: no producer, no `Stream-Seq`, no close) uses a kept
  entry, and only what never changes for its run: the run id, the content type, the TTL
  and the expiry;
- a path stops naming a run (DELETE, expiry, a soft delete) only after that run was
  marked erased, on whichever node did it, and an erased run refuses every append in the
  append's own transaction (`RunErased`); so an append through a stale entry stores
  nothing, and its caller forgets the entry and asks the catalog;
- a kept entry that looks expired is asked for again: its `touched_at` is never later than
  the catalog's (a TTL only slides forward), so it expires no later than the real one;
- bounded: the least recently used entry goes first.
"""

from __future__ import annotations

from collections import OrderedDict
from datetime import datetime

from application.ports.durable_streams import FacadeEntry

CAPACITY = 10_000


class EntryCache:
    def __init__(self, capacity: int = CAPACITY) -> None:
        self._capacity = capacity
        self._entries: OrderedDict[tuple[str, str], FacadeEntry] = OrderedDict()

    def get(self, tenant: str, path: str, now: datetime) -> FacadeEntry | None:
        """The kept entry, unless there is none or it looks expired."""
        entry = self._entries.get((tenant, path))
        if entry is None or entry.expired(now):
            return None
        self._entries.move_to_end((tenant, path))
        return entry

    def keep(self, tenant: str, entry: FacadeEntry) -> None:
        self._entries[(tenant, entry.path)] = entry
        self._entries.move_to_end((tenant, entry.path))
        if len(self._entries) > self._capacity:
            self._entries.popitem(last=False)

    def forget(self, tenant: str, path: str) -> None:
        self._entries.pop((tenant, path), None)

    def __len__(self) -> int:
        return len(self._entries)
