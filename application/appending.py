"""Use case: append a batch of records under the stream-row lock, with durable credit."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from contextlib import AbstractContextManager, AsyncExitStack, nullcontext
from dataclasses import dataclass
from typing import Any, TypeVar

from application.access import (
    DefinitionCache,
    definition_for_writing,
    load_stream,
    stream_key,
)
from application.live import LivePublishing
from application.node import NodeSettings
from application.ports.clock import Clock
from application.ports.records import StoredRecord
from application.ports.streams import StreamSession, StreamStore
from application.ports.waking import WakeBus
from application.store_budget import store_budget, store_deadline
from domain.errors import Backpressure, InvalidRecord
from domain.identifiers import StreamKey
from domain.pins import CreditPins
from domain.principal import Principal
from domain.records import Draft, drafts_from_wire
from domain.stream import AppendPlan

T = TypeVar("T")


@dataclass(frozen=True)
class AppendResult:
    """`published` counts records of a best-effort stream: sent live, stored nowhere."""

    sequences: tuple[int, ...]
    head: int
    stored: int
    published: int = 0
    duplicates: tuple[int, ...] = ()
    """Positions in the batch whose idempotency key was used before: they stored nothing."""

    @property
    def all_duplicates(self) -> bool:
        return self.stored == 0 and self.published == 0


class Appender:
    """All records of a batch get consecutive sequences in one transaction, or none does.

    Credit is decided inside that transaction from durable counts. When the
    unread ceiling is full, policy `reject` answers backpressure at once;
    policy `block` waits, without holding the lock, for wakes (acks) until its
    pinned timeout, then answers backpressure. A `best_effort` stream stores
    nothing: its records go out as live chunks to whoever is connected.
    An attempt's waits on the store (its definition, its transaction) share one
    deadline, `store_budget_seconds` from its start; a `block` wait is not one of them.
    """

    def __init__(self, store: StreamStore, bus: WakeBus, clock: Clock, node: NodeSettings,
                 live: LivePublishing) -> None:
        self._store = store
        self._definitions = DefinitionCache(store)
        self._live = live
        self._bus = bus
        self._clock = clock
        self._node = node

    async def append(self, principal: Principal, run_id: str, stream_id: str,
                     records: Sequence[Any], message_batches: bool = False) -> AppendResult:
        """Every record's body is masked or refused (`drafts_from_wire`) before any is
        stored or sent. `message_batches`: an array payload holds messages, each masked
        alone (the Durable Streams facade's JSON mode)."""
        key = stream_key(principal, run_id, stream_id)
        with store_budget(self._node.store_budget_seconds):  # the definition shares it
            definition = await definition_for_writing(self._definitions, principal, key,
                                                      self._node.region, self._clock.now())
            if not isinstance(records, list) or not records:
                raise InvalidRecord("records must be a non-empty list")
            redaction = definition.redaction
            drafts = drafts_from_wire(records, redaction.mask, redaction.allow_unmasked_bodies,
                                      message_batches)
            if definition.mode == "best_effort":
                stream = await load_stream(self._store, key, self._clock.now())
                stream.ensure_open(nothing_more_is="sent")
                published = await self._live.publish_drafts(key, drafts)
                return AppendResult((), stream.head, 0, published)
            return await self.under_unread_policy(key, definition.credit,
                                                  lambda: self.append_drafts(key, drafts))

    async def ensure_writer(self, principal: Principal, run_id: str, stream_id: str) -> None:
        """Refuse as `append` would for who may append here, on the pins alone."""
        await definition_for_writing(self._definitions, principal,
                                     stream_key(principal, run_id, stream_id), self._node.region,
                                     self._clock.now())

    async def append_drafts(self, key: StreamKey, drafts: Sequence[Draft]) -> AppendResult:
        return await self._store.transact(key, lambda session: self.append_in(session, drafts))

    async def append_in(self, session: StreamSession, drafts: Sequence[Draft]) -> AppendResult:
        """Append validated drafts inside a unit of work the caller holds (object commit
        stages its intent in the same transaction). Acts on the session only, so a
        store may run it again (`StreamStore.transact`)."""
        session.stream.ensure_live(self._clock.now())
        session.stream.ensure_not_erased(session.run_erased)
        keys = [draft.idempotency_key for draft in drafts if draft.idempotency_key]
        receipts = await session.receipts(keys) if keys else {}
        plan = session.stream.plan_append(drafts, receipts)
        session.stream.append(plan)
        self._stage(session, plan)
        return AppendResult(plan.sequences, session.stream.head, len(plan.new),
                            duplicates=plan.duplicates)

    def _stage(self, session: StreamSession, plan: AppendPlan) -> None:
        if not plan.new:
            return
        now = self._clock.now()
        session.add_records([StoredRecord.from_draft(sequence, draft, now, offset)
                             for (sequence, draft), offset in zip(plan.new, plan.offsets,
                                                                  strict=True)])
        if session.stream.definition.direction == "input":
            session.add_deliveries([sequence for sequence, _ in plan.new])

    async def under_unread_policy(self, key: StreamKey, credit: CreditPins,
                                  attempt: Callable[[], Awaitable[T]]) -> T:
        """Run `attempt` (an append of some kind) under the stream's pinned unread policy:
        `reject` answers its backpressure at once; `block` tries again on every wake
        (acks) until the pinned timeout, then answers the last backpressure."""
        if credit.on_unread_full != "block":
            return await attempt()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + credit.block_timeout_seconds
        async with AsyncExitStack() as stack:
            # Subscribe before the first try so an ack committed in between still wakes us.
            wakes = await stack.enter_async_context(self._bus.subscribe(key))
            budget: AbstractContextManager[None] = nullcontext()  # the caller's, at first
            while True:
                try:
                    with budget:
                        return await attempt()
                except Backpressure:
                    remaining = deadline - loop.time()
                    if remaining <= 0:
                        raise
                    await wakes.next(min(remaining, self._node.keepalive_seconds))
                    # That wait was not on the store: the next attempt has a budget of its
                    # own, when the caller opened one.
                    if store_deadline() is not None:
                        budget = store_budget(self._node.store_budget_seconds)
