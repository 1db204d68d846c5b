"""In-memory input-delivery and body-deletion outboxes: their rows arrive from the
memory store's commits (`adapters.memory.store`), as Postgres's arrive in the
committing transaction."""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from application.ports.outboxes import BodyDeletion, Delivery, DeliveryRedrive
from domain.identifiers import StreamKey


@dataclass
class _OutboxRow:
    delivery: Delivery
    home: str
    next_attempt_at: datetime | None = None
    lease_until: datetime | None = None
    done: bool = False
    created_at: datetime | None = None


class MemoryDeliveryOutbox:
    """Implements `DeliveryOutbox`; rows arrive from the store's commits."""

    def __init__(self) -> None:
        self._rows: dict[tuple[StreamKey, int], _OutboxRow] = {}
        self._redrives: dict[StreamKey, list[DeliveryRedrive]] = defaultdict(list)

    def enqueue(self, key: StreamKey, sequences: Sequence[int], home: str,
                at: datetime | None = None) -> None:
        for sequence in sequences:
            self._rows[(key, sequence)] = _OutboxRow(Delivery(key, sequence, 0), home,
                                                     created_at=at)

    def purge(self, before: datetime, limit: int, home: str,
              stream: StreamKey | None = None) -> int:
        """Forget up to `limit` finished rows of `home` created at or before `before` (with
        `stream`: every row of that stream, finished or not)."""
        doomed = [where for where, row in sorted(self._rows.items(),
                                                 key=lambda item: (item[1].created_at
                                                                   or before, item[0]))
                  if row.home == home and (
                      where[0] == stream if stream is not None
                      else row.done and row.created_at is not None
                      and row.created_at <= before)][:max(0, limit)]
        for where in doomed:
            del self._rows[where]
        if stream is not None and len(doomed) < max(0, limit):
            self._redrives.pop(stream, None)  # erased: its audit goes with its rows
        return len(doomed)

    def rows_of(self, key: StreamKey) -> int:
        """Rows of `key`, finished or not."""
        return sum(1 for stream, _ in self._rows if stream == key)

    async def claim(self, worker: str, now: datetime, lease_seconds: float,
                    limit: int, home: str) -> Sequence[Delivery]:
        lines: dict[StreamKey, list[_OutboxRow]] = defaultdict(list)
        for (stream, _), row in sorted(self._rows.items()):
            if row.home == home and not row.done and not row.delivery.dead:
                lines[stream].append(row)
        takeable: list[list[_OutboxRow]] = []
        for line in lines.values():
            open_rows = list(itertools.takewhile(lambda row: _claimable(row, now), line))
            if open_rows:
                takeable.append(open_rows)
        # Every stream's head before any stream's second row, and so on.
        taken = sorted(((place, row) for line in takeable for place, row in enumerate(line)),
                       key=lambda item: (item[0], item[1].delivery.stream))[:max(0, limit)]
        for _, row in taken:
            row.lease_until = now + timedelta(seconds=lease_seconds)
            row.delivery = replace(row.delivery, claimed_by=worker)
        return sorted((row.delivery for _, row in taken),
                      key=lambda delivery: (delivery.stream, delivery.sequence))

    async def complete(self, key: StreamKey, sequence: int) -> None:
        self._rows[(key, sequence)].done = True

    async def retry(self, key: StreamKey, sequence: int, error: str,
                    next_attempt_at: datetime) -> None:
        row = self._rows[(key, sequence)]
        row.delivery = replace(row.delivery, attempts=row.delivery.attempts + 1,
                               last_error=error, claimed_by=None)
        row.next_attempt_at = next_attempt_at
        row.lease_until = None

    async def release(self, key: StreamKey, sequences: Sequence[int], worker: str) -> None:
        for sequence in sequences:
            row = self._rows.get((key, sequence))
            if row is not None and not row.done and row.delivery.claimed_by == worker:
                row.delivery = replace(row.delivery, claimed_by=None)
                row.lease_until = None

    async def dead_letter(self, key: StreamKey, sequence: int, error: str) -> None:
        row = self._rows[(key, sequence)]
        row.delivery = replace(row.delivery, attempts=row.delivery.attempts + 1,
                               last_error=error, dead=True, claimed_by=None)
        row.lease_until = None

    async def dead_letters(self, key: StreamKey) -> Sequence[Delivery]:
        return [row.delivery for (k, _), row in sorted(self._rows.items()) if k == key
                and row.delivery.dead]

    async def redrive(self, key: StreamKey, sequences: Sequence[int], by: str,
                      at: datetime) -> Sequence[int]:
        redriven: list[int] = []
        for sequence in sorted(set(sequences)):
            row = self._rows.get((key, sequence))
            if row is None or not row.delivery.dead:
                continue
            row.delivery = Delivery(key, sequence, 0)
            row.next_attempt_at = row.lease_until = None
            redriven.append(sequence)
        if redriven:
            self._redrives[key].append(DeliveryRedrive(by, at, tuple(redriven)))
        return redriven

    async def redrives(self, key: StreamKey, limit: int) -> Sequence[DeliveryRedrive]:
        return list(reversed(self._redrives.get(key, [])))[:max(0, limit)]

    def pending(self) -> int:
        return sum(1 for row in self._rows.values() if not row.done and not row.delivery.dead)

    async def pending_count(self, key: StreamKey | None = None) -> int:
        return sum(1 for (k, _), row in self._rows.items() if key in (None, k)
                   and not row.done and not row.delivery.dead)


def _claimable(row: _OutboxRow, now: datetime) -> bool:
    return ((row.next_attempt_at is None or row.next_attempt_at <= now)
            and (row.lease_until is None or row.lease_until <= now))


@dataclass
class _DeletionRow:
    deletion: BodyDeletion
    not_before: datetime
    home: str | None
    """Who may claim it: the owning stream's home, or the body's region for an orphan."""
    lease_until: datetime | None = None


class MemoryDeletionOutbox:
    """Implements `DeletionOutbox`; rows arrive from the store's commits (one per body)."""

    def __init__(self) -> None:
        self._rows: dict[str, _DeletionRow] = {}
        self._bodies: dict[tuple[str, str], str] = {}
        self._ids = itertools.count(1)

    def enqueue(self, key: StreamKey | None, bodies: Sequence[tuple[str, str, datetime]],
                home: str | None = None) -> None:
        """`home`: the owning stream's metadata home (None for a body no stream owns)."""
        for region, object_key, not_before in bodies:
            if (region, object_key) in self._bodies:
                continue
            deletion_id = str(next(self._ids))
            self._bodies[(region, object_key)] = deletion_id
            self._rows[deletion_id] = _DeletionRow(
                BodyDeletion(deletion_id, key, region, object_key), not_before,
                home if key is not None else region)

    async def claim(self, worker: str, now: datetime, lease_seconds: float,
                    limit: int, home: str) -> Sequence[BodyDeletion]:
        claimed: list[BodyDeletion] = []
        for row in sorted(self._rows.values(),
                          key=lambda r: (r.not_before, int(r.deletion.id))):
            if len(claimed) >= limit:
                break
            if row.home != home or row.not_before > now or (
                    row.lease_until is not None and row.lease_until > now):
                continue
            row.lease_until = now + timedelta(seconds=lease_seconds)
            claimed.append(row.deletion)
        return claimed

    async def claim_bodies(self, worker: str, bodies: Sequence[tuple[str, str]],
                           now: datetime, lease_seconds: float) -> Sequence[BodyDeletion]:
        claimed: list[BodyDeletion] = []
        for body in dict.fromkeys(bodies):
            deletion_id = self._bodies.get(body)
            row = self._rows.get(deletion_id) if deletion_id is not None else None
            if row is None or (row.lease_until is not None and row.lease_until > now):
                continue
            row.lease_until = now + timedelta(seconds=lease_seconds)
            claimed.append(row.deletion)
        return claimed

    async def in_flight(self, stream: StreamKey, now: datetime) -> int:
        return sum(1 for row in self._rows.values() if row.deletion.stream == stream
                   and row.lease_until is not None and row.lease_until > now)

    async def complete(self, deletion_id: str) -> None:
        row = self._rows.pop(deletion_id, None)
        if row is not None:
            self._bodies.pop((row.deletion.region, row.deletion.object_key), None)

    async def postpone(self, deletion_id: str, next_attempt_at: datetime,
                       error: str | None = None) -> None:
        row = self._rows[deletion_id]
        if error is not None:
            row.deletion = replace(row.deletion, attempts=row.deletion.attempts + 1,
                                   last_error=error)
        row.not_before = next_attempt_at
        row.lease_until = None

    def queued(self) -> list[tuple[str, str]]:
        """(region, object key) of every row still queued, in queue order."""
        return [(row.deletion.region, row.deletion.object_key)
                for row in sorted(self._rows.values(), key=lambda r: int(r.deletion.id))]
