"""Use case: an input stream's deliveries, read-only (ADR 0046): how many input records are
still pending, which ones dead-lettered, with their attempts and last error, and who
re-drove which dead letters when (ADR 0057)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from application.access import stream_for_reading, stream_key
from application.node import NodeSettings
from application.ports.clock import Clock
from application.ports.outboxes import Delivery, DeliveryOutbox, DeliveryRedrive
from application.ports.streams import StreamStore
from domain.principal import Principal

MAX_DEAD_LETTERS_SHOWN = 100
"""Dead letters listed (the lowest sequences); `dead_letter_count` counts them all."""
MAX_REDRIVES_SHOWN = 20
"""Re-drives listed, the latest first (ADR 0057)."""


@dataclass(frozen=True)
class DeliveryReport:
    direction: str
    pending: int
    dead_letters: Sequence[Delivery]
    """At most `MAX_DEAD_LETTERS_SHOWN`, ascending by sequence."""
    dead_letter_count: int
    redrives: Sequence[DeliveryRedrive] = ()
    """At most `MAX_REDRIVES_SHOWN`, newest first: who put which dead letters back, when."""


class DeliveryInspection:
    """Guarded like a stream's status (read scope, reader pins, metadata served here): an
    output stream has no deliveries and answers zeros."""

    def __init__(self, store: StreamStore, outbox: DeliveryOutbox, clock: Clock,
                 node: NodeSettings) -> None:
        self._store = store
        self._outbox = outbox
        self._clock = clock
        self._node = node

    async def report(self, principal: Principal, run_id: str, stream_id: str) -> DeliveryReport:
        key = stream_key(principal, run_id, stream_id)
        stream = await stream_for_reading(self._store, principal, key, self._node.region,
                                          content=False, now=self._clock.now())
        direction = stream.definition.direction
        if direction != "input":
            return DeliveryReport(direction, 0, (), 0)
        dead = await self._outbox.dead_letters(key)
        return DeliveryReport(direction, await self._outbox.pending_count(key),
                              list(dead[:MAX_DEAD_LETTERS_SHOWN]), len(dead),
                              await self._outbox.redrives(key, MAX_REDRIVES_SHOWN))
