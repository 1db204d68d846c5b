"""Use case: deliver input records to the workflow through its wait service.

At-least-once with a stable event id; the event and its id both carry the tenant
(ADR 0022). Each stream is delivered in sequence order (ADR 0057): the publish of a
record starts only once the publish of every earlier pending record of its stream
has returned, so a failed record holds back the records behind it, in its stream
only. Retries back off exponentially; after the pinned number of attempts a row is
dead-lettered, stays visible, and no longer holds its stream back (an operator
re-drives it). With no wait service configured nothing is claimed: every row stays
pending (and counted) until a node with one takes it (ADR 0014).
"""

from __future__ import annotations

from datetime import timedelta
from enum import Enum

from application.node import NodeSettings
from application.ports.clock import Clock
from application.ports.outboxes import Delivery, DeliveryOutbox, InputEvent, WorkflowWaitService
from application.ports.records import RecordReader
from application.views import DeliveryCounts, record_envelope
from domain.identifiers import StreamKey, input_event_id
from domain.stream import Stream

MAX_BACKOFF_SECONDS = 300.0


def backoff_seconds(attempts: int) -> float:
    return float(min(MAX_BACKOFF_SECONDS, 2 ** max(0, attempts - 1)))


class _Outcome(Enum):
    DELIVERED = "delivered"
    DEAD = "dead"
    """Given up: the stream's line goes on without it."""
    RETRYING = "retrying"
    """Backing off: the rest of its stream waits for it."""


class InputDispatcher:
    def __init__(self, outbox: DeliveryOutbox, reader: RecordReader,
                 wait_service: WorkflowWaitService | None, clock: Clock,
                 node: NodeSettings) -> None:
        self._outbox = outbox
        self._reader = reader
        self._wait_service = wait_service
        self._clock = clock
        self._node = node

    async def counts(self, stream: Stream) -> DeliveryCounts:
        """The stream's input records still pending and dead-lettered (none for output
        streams, which have no deliveries); the caller has already authorized reading
        `stream`."""
        if stream.definition.direction != "input":
            return DeliveryCounts()
        return DeliveryCounts(pending=await self._outbox.pending_count(stream.key),
                              dead_letters=len(await self._outbox.dead_letters(stream.key)))

    async def pending_total(self) -> int:
        """Input records of every stream not yet handed over nor given up."""
        return await self._outbox.pending_count()

    async def dispatch_once(self, worker: str, limit: int = 100) -> int:
        """Claim due rows and publish each; returns how many were handed over. Without a
        wait service nothing is claimed: a claim would only burn attempts and leases."""
        if self._wait_service is None:
            return 0
        claimed = await self._outbox.claim(worker, self._clock.now(),
                                           self._node.delivery_lease_seconds, limit,
                                           self._node.region)
        lines: dict[StreamKey, list[Delivery]] = {}
        for delivery in claimed:
            lines.setdefault(delivery.stream, []).append(delivery)
        delivered = 0
        for key, line in lines.items():
            for place, delivery in enumerate(line):
                outcome = await self._deliver(self._wait_service, delivery)
                if outcome is _Outcome.DELIVERED:
                    delivered += 1
                elif outcome is _Outcome.RETRYING:
                    behind = [later.sequence for later in line[place + 1:]]
                    await self._outbox.release(key, behind, worker)
                    break
        return delivered

    async def _deliver(self, wait_service: WorkflowWaitService,
                       delivery: Delivery) -> _Outcome:
        key, sequence = delivery.stream, delivery.sequence
        page = await self._reader.read_page(key, sequence - 1, 1)
        if not page.records or page.records[0].sequence != sequence:
            await self._outbox.dead_letter(key, sequence, "record is no longer retained")
            return _Outcome.DEAD
        event = InputEvent(input_event_id(key, sequence), key.tenant, key.run_id,
                           key.stream_id, sequence,
                           record_envelope(page.records[0], key.run_id, key.stream_id))
        try:
            await wait_service.publish(event)
        except Exception as error:  # any failure of the port is retried, never lost
            attempts = delivery.attempts + 1
            message = f"{type(error).__name__}: {error}"[:500]
            if attempts >= self._node.delivery_max_attempts:
                await self._outbox.dead_letter(key, sequence, message)
                return _Outcome.DEAD
            next_at = self._clock.now() + timedelta(seconds=backoff_seconds(attempts))
            await self._outbox.retry(key, sequence, message, next_at)
            return _Outcome.RETRYING
        await self._outbox.complete(key, sequence)
        return _Outcome.DELIVERED
