"""Use case: an operator puts an input stream's dead letters back in line (ADR 0057).

A re-driven record is pending again with no attempt spent and is its stream's next
delivery: records behind it that are not delivered yet wait for it; records delivered
while it was dead stay delivered (it arrives after them, with its own sequence and
event id). Each re-drive that changed something is recorded (who, when, which) and shown
in the stream's deliveries view.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from application.access import load_stream, stream_key
from application.node import NodeSettings
from application.ports.clock import Clock
from application.ports.outboxes import DeliveryOutbox
from application.ports.streams import StreamStore
from domain.errors import NotAnInputStream
from domain.principal import Principal, Scope
from domain.residency import ensure_may_write_here

MAX_REDRIVE_SEQUENCES = 1000
"""Sequences one re-drive takes; without a list, the stream's lowest this many dead letters
whose record is retained (those pruned are reported, and stay dead)."""


@dataclass(frozen=True)
class RedriveReport:
    redriven: tuple[int, ...]
    not_dead: tuple[int, ...]
    """Asked for, but not dead letters (pending, delivered, or no such record): untouched."""
    not_retained: tuple[int, ...]
    """Dead letters whose record retention pruned: nothing left to deliver, left dead."""
    dead_letter_count: int
    """Dead letters of the stream after the re-drive."""


class DeadLetterRedrive:
    """Admins only (`streams:admin`), at the stream's metadata home, on an input stream of a
    run that is not erased."""

    def __init__(self, store: StreamStore, outbox: DeliveryOutbox, clock: Clock,
                 node: NodeSettings) -> None:
        self._store = store
        self._outbox = outbox
        self._clock = clock
        self._node = node

    async def redrive(self, principal: Principal, run_id: str, stream_id: str,
                      sequences: Sequence[int] | None) -> RedriveReport:
        """`sequences`: which dead letters (at most `MAX_REDRIVE_SEQUENCES`); None for the
        stream's lowest dead letters."""
        principal.require_scope(Scope.ADMIN)
        key = stream_key(principal, run_id, stream_id)
        stream = await load_stream(self._store, key, self._clock.now())
        ensure_may_write_here(stream.definition.placement, self._node.region)
        stream.ensure_not_erased(nothing_more_is="re-driven")
        if stream.definition.direction != "input":
            raise NotAnInputStream("an output stream is not delivered to the workflow: it "
                                   "has no dead letters to re-drive")
        dead = [delivery.sequence for delivery in await self._outbox.dead_letters(key)]
        if sequences is None:  # pruned ones are reported apart: they never fill the batch
            retained = [s for s in dead if s >= stream.earliest][:MAX_REDRIVE_SEQUENCES]
            pruned = tuple(s for s in dead if s < stream.earliest)[:MAX_REDRIVE_SEQUENCES]
        else:
            asked, dead_ones = sorted(set(sequences)), set(dead)
            retained = [s for s in asked if s >= stream.earliest]
            pruned = tuple(s for s in asked if s < stream.earliest and s in dead_ones)
        redriven = tuple(await self._outbox.redrive(key, retained, principal.sub,
                                                    self._clock.now()))
        not_dead = tuple(sorted({*retained, *(sequences or ())} - {*redriven, *pruned}))
        remaining = len(await self._outbox.dead_letters(key))
        return RedriveReport(redriven, not_dead, pruned, remaining)
