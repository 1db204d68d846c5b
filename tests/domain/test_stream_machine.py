"""`Stream` against a plain Python model, over random command sequences.

The model is the rule written the simplest way: a dict of record sizes by
sequence, the earliest retained sequence, an unread floor and the acks of the
declared consumers (one of them pinned to a principal). After every step the
aggregate must agree with it, stay inside every ceiling, keep its pins, and be
rebuilt exactly from its own events. A refused command must leave every
attribute of the aggregate as it was.

Unread bytes are counters in the aggregate (byte offsets, ADR 0047) and a sum of
sizes above the floor in the model. Acks and prunes hand in the record's offset
the way the use cases do (the model's running total); a missing or impossible
offset where one is needed is refused, changing nothing.
"""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import event, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from domain.credit import Usage
from domain.definition import StreamDefinition
from domain.errors import (
    AckBeyondHead,
    AckRegression,
    Backpressure,
    ConsumerNotFound,
    ConsumerScope,
    DomainError,
    QuotaExhausted,
    RunErased,
    StreamClosed,
    StreamHeld,
    TooLarge,
)
from domain.stream import OffsetNeeded, Stream
from tests.domain.factories import KEY, T0, credit, definition, draft, refused_unchanged, replayed

CONSUMERS = ("ui", "audit", "ops")
PRINCIPALS = ("alice", "bob")
IDEMPOTENCY_KEYS = ("k0", "k1", "k2", "k3", "k4")
OBJECTS = ("o1", "o2", "o3")
BATCHES = st.lists(st.tuples(st.integers(0, 25), st.none() | st.sampled_from(IDEMPOTENCY_KEYS)),
                   min_size=1, max_size=4)


class StreamMachine(RuleBasedStateMachine):
    stream: Stream
    pins: StreamDefinition
    pins_wire: dict[str, Any]

    @initialize(consumers=st.lists(st.sampled_from(CONSUMERS[:2]), unique=True, max_size=2),
                unread_items=st.integers(2, 10), unread_bytes=st.integers(40, 300),
                total_items=st.integers(1, 30), total_bytes=st.integers(20, 600),
                open_objects=st.integers(1, 3))
    def create(self, consumers: list[str], unread_items: int, unread_bytes: int,
               total_items: int, total_bytes: int, open_objects: int) -> None:
        declarations: list[Any] = [
            {"id": consumer, "principals": [PRINCIPALS[0]]} if consumer == "audit" else consumer
            for consumer in consumers]
        self.pins = definition(consumers=declarations, credit=credit(
            max_unread_items=unread_items, max_unread_bytes=unread_bytes,
            max_total_items=total_items, max_total_bytes=total_bytes,
            max_open_objects=open_objects))
        self.pins_wire = copy.deepcopy(self.pins.to_wire())
        self.stream = Stream.start(KEY, self.pins, T0)
        self.events: list[Any] = []
        # The model.
        self.sizes: dict[int, int] = {}
        self.receipts: dict[str, int] = {}
        self.earliest = 1
        self.floor = 0
        self.acks: dict[str, int] = dict.fromkeys(consumers, 0)
        self.pinned = {"audit": PRINCIPALS[0]} if "audit" in consumers else {}
        self.reserved: dict[str, int] = {}
        self.closed = self.held = self.erased = False
        self.reason: str | None = None
        self.acks_seen: dict[str, int] = dict(self.acks)

    # -- the model's derived values ----------------------------------------

    @property
    def head(self) -> int:
        return len(self.sizes)

    def usage(self) -> Usage:
        unread = [self.sizes[sequence] for sequence in range(self.floor + 1, self.head + 1)]
        return Usage(len(unread), sum(unread), len(self.sizes),
                     sum(self.sizes.values()) + sum(self.reserved.values()))

    def offset(self, sequence: int) -> int:
        """What record `sequence` stores: the sizes of every record through it."""
        return sum(self.sizes[n] for n in range(1, sequence + 1))

    def handed_offset(self, sequence: int, data: st.DataObject) -> int | None:
        """The offset a use case passes: the record's own when the stream needs one.
        Sometimes none or a wrong one instead, which must be refused when needed."""
        if not 0 <= sequence <= self.head:
            return None
        return data.draw(st.sampled_from([self.offset(sequence)] * 4 + [None, -1]))

    def raise_floor(self, candidate: int) -> None:
        self.floor = min(max(self.floor, candidate, self.earliest - 1), self.head)

    def raise_floor_to_the_slowest(self) -> None:
        self.raise_floor(min(self.acks.values()) if self.acks else self.head)

    # -- commands ------------------------------------------------------------

    @rule(batch=BATCHES)
    def append(self, batch: list[tuple[int, str | None]]) -> None:
        drafts = [draft(size, key) for size, key in batch]
        used = {key: self.receipts[key] for _, key in batch if key in self.receipts}
        expected: list[int] = []
        new: dict[int, tuple[int, str | None]] = {}
        seen = dict(used)
        for size, key in batch:
            if key is not None and key in seen:
                expected.append(seen[key])
                continue
            sequence = self.head + len(new) + 1
            expected.append(sequence)
            new[sequence] = (size, key)
            if key is not None:
                seen[key] = sequence
        error = self.append_refusal(len(new), sum(size for size, _ in new.values()))
        # Visible with --hypothesis-show-statistics: every outcome must actually be reached.
        event(f"append: {error.__name__ if error else 'stored' if new else 'all duplicates'}")
        if error is not None:
            with refused_unchanged(self.stream, error):
                self.stream.plan_append(drafts, used)
            return
        plan = self.stream.plan_append(drafts, used)
        self.stream.append(plan)
        assert plan.sequences == tuple(expected)
        assert [sequence for sequence, _ in plan.new] == list(new)
        for sequence, (size, key) in new.items():
            self.sizes[sequence] = size
            if key is not None:
                self.receipts[key] = sequence
        self.raise_floor_to_the_slowest()

    def append_refusal(self, items: int, size: int) -> type[DomainError] | None:
        if self.erased:
            return RunErased
        if items == 0:
            return None  # every record was a duplicate: answered even when closed
        limits = self.pins.credit
        usage = self.usage()
        if self.closed:
            return StreamClosed
        gated = bool(self.acks)
        if gated and (items > limits.max_unread_items or size > limits.max_unread_bytes):
            return TooLarge
        if (usage.total_items + items > limits.max_total_items
                or usage.total_bytes + size > limits.max_total_bytes):
            return QuotaExhausted
        if gated and (usage.unread_items + items > limits.max_unread_items
                or usage.unread_bytes + size > limits.max_unread_bytes):
            return Backpressure
        return None

    @rule(consumer=st.sampled_from(CONSUMERS), principal=st.sampled_from(PRINCIPALS),
          data=st.data())
    def ack(self, consumer: str, principal: str, data: st.DataObject) -> None:
        current = self.acks.get(consumer)
        sequence = data.draw(st.integers(-1, self.head + 2) | st.just(current or 0))
        error: type[DomainError] | None = None
        if current is None:
            error = ConsumerNotFound
        elif self.pinned.get(consumer, principal) != principal:
            error = ConsumerScope
        elif sequence < 0 or sequence < current:
            error = AckRegression
        elif sequence > self.head:
            error = AckBeyondHead
        offset = self.handed_offset(sequence, data)
        # Re-acking the current value changes nothing, so it needs no offset.
        if (error is None and sequence != current and self.floor < sequence < self.head
                and offset != self.offset(sequence)):
            error = OffsetNeeded  # needed, and missing or outside the unread window
            if offset is not None and self.offset(self.floor) <= offset <= self.offset(
                    self.head):
                return  # a wrong offset inside the window cannot be told from the store's
        event(f"ack: {error.__name__ if error else 'accepted'}")
        if error is not None:
            with refused_unchanged(self.stream, error):
                self.stream.ack(consumer, sequence, principal, offset)
            return
        changed = self.stream.ack(consumer, sequence, principal, offset)
        assert changed == (current != sequence)
        self.acks[consumer] = sequence
        self.raise_floor_to_the_slowest()

    @rule(object_id=st.sampled_from(OBJECTS), size=st.integers(0, 200))
    def reserve_object(self, object_id: str, size: int) -> None:
        limits = self.pins.credit
        error: type[DomainError] | None = None
        if self.erased:
            error = RunErased
        elif self.closed:
            error = StreamClosed
        elif object_id in self.reserved:
            error = None
        elif (len(self.reserved) >= limits.max_open_objects
              or self.usage().total_bytes + size > limits.max_total_bytes):
            error = QuotaExhausted
        event(f"reserve: {error.__name__ if error else 'reserved'}")
        if error is not None:
            with refused_unchanged(self.stream, error):
                self.stream.reserve_object(object_id, size)
            return
        self.stream.reserve_object(object_id, size)
        self.reserved.setdefault(object_id, size)

    @rule(object_id=st.sampled_from(OBJECTS))
    def release_object(self, object_id: str) -> None:
        assert self.stream.release_object(object_id) == (object_id in self.reserved)
        self.reserved.pop(object_id, None)

    # Close and erase end appending for good; letting them fire only once something was
    # stored keeps most sequences busy with appends and acks (unit tests cover empty ones).
    @precondition(lambda self: self.head > 0)
    @rule()
    def close(self) -> None:
        assert self.stream.close() == (not self.closed)
        self.closed = True

    @rule(held=st.booleans(), reason=st.sampled_from([None, "case-1", "case-2"]))
    def set_legal_hold(self, held: bool, reason: str | None) -> None:
        changed = self.stream.set_legal_hold(held, reason)
        assert changed == ((held, reason) != (self.held, self.reason))
        self.held, self.reason = held, reason

    @rule(data=st.data())
    def prune(self, data: st.DataObject) -> None:
        through = data.draw(st.integers(-1, self.head + 2))
        clamped = min(through, self.head)
        offset = self.handed_offset(clamped, data)
        if self.held:
            with refused_unchanged(self.stream, StreamHeld):
                self.stream.prune(through, offset)
            return
        if (clamped >= self.earliest and self.floor < clamped < self.head
                and offset != self.offset(clamped)):
            if offset is None or offset == -1:
                event("prune: OffsetNeeded")
                with refused_unchanged(self.stream, OffsetNeeded):
                    self.stream.prune(through, offset)
            return
        if clamped >= self.earliest:
            self.earliest = clamped + 1
            self.raise_floor(clamped)
        assert self.stream.prune(through, offset) == self.earliest

    @precondition(lambda self: self.head > 2)
    @rule()
    def erase(self) -> None:
        removed = self.stream.erase()
        self.closed = True  # an erased (or sealed) stream is closed: its followers end
        if self.held:
            assert removed is False
            self.erased = True
            return
        assert removed == (not self.erased or self.earliest != self.head + 1
                           or bool(self.reserved))
        self.erased = True
        self.earliest = self.head + 1
        self.raise_floor(self.head)
        self.reserved = {}

    # -- what must always hold ----------------------------------------------

    @invariant()
    def collect_events(self) -> None:
        self.events.extend(self.stream.collect_events())

    @invariant()
    def agrees_with_the_model(self) -> None:
        stream = self.stream
        assert (stream.head, stream.earliest) == (self.head, self.earliest)
        assert stream.usage == self.usage()
        assert stream.acks == self.acks
        assert stream.reservations == self.reserved
        assert (stream.closed, stream.legal_hold, stream.hold_reason, stream.erased) == (
            self.closed, self.held, self.reason, self.erased)

    @invariant()
    def offsets_are_the_running_totals(self) -> None:
        stream = self.stream
        assert stream.head_offset == self.offset(self.head)
        assert stream.floor_offset == self.offset(self.floor)
        assert stream.unread_floor == self.floor
        assert stream.unread_bytes == stream.head_offset - stream.floor_offset
        for consumer, acked in stream.acks.items():
            if acked > self.floor:  # below it, never needed again
                assert stream.ack_offsets[consumer] == self.offset(acked)

    @invariant()
    def sequences_are_dense(self) -> None:
        assert list(self.sizes) == list(range(1, self.stream.head + 1))
        assert 1 <= self.stream.earliest <= self.stream.head + 1

    @invariant()
    def ceilings_are_never_exceeded(self) -> None:
        usage, limits = self.stream.usage, self.pins.credit
        assert usage.unread_items <= limits.max_unread_items
        assert usage.unread_bytes <= limits.max_unread_bytes
        assert usage.total_items <= limits.max_total_items
        assert usage.total_bytes <= limits.max_total_bytes

    @invariant()
    def acks_only_advance(self) -> None:
        for consumer, acked in self.stream.acks.items():
            assert acked >= self.acks_seen.get(consumer, 0)
        assert self.stream.acks.keys() == set(self.pins.consumer_ids)
        self.acks_seen = dict(self.stream.acks)

    @invariant()
    def pins_never_change(self) -> None:
        assert self.stream.definition is self.pins
        assert self.stream.definition.to_wire() == self.pins_wire

    @invariant()
    def rebuilt_from_its_events_equals_the_live_stream(self) -> None:
        assert [event.originator_version for event in self.events] == list(
            range(1, len(self.events) + 1))
        assert vars(replayed(self.events)) == vars(self.stream)


StreamMachine.TestCase.settings = settings(max_examples=200, stateful_step_count=30,
                                           deadline=None)
TestStreamMachine = StreamMachine.TestCase
