"""Wakes and live chunks, and the bus that carries them between readers and writers."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import Any, Protocol

from application.ports.records import StoredRecord
from domain.identifiers import StreamKey
from domain.live_seq import LivePosition


@dataclass(frozen=True)
class Wake:
    """A doorbell: something changed on `stream` and was committed.

    `records` carries the newly committed records when they are small enough
    to ride along (a reader may use them instead of reading the store); None
    means "re-read from your cursor" (too large, coalesced, or the bus
    reconnected). A wake is only ever a hint: losing one delays, never loses.
    """

    stream: StreamKey
    head: int
    closed: bool = False
    records: tuple[StoredRecord, ...] | None = None


@dataclass(frozen=True)
class LiveChunk:
    """A best-effort chunk as readers get it: stored nowhere, dropped when nobody listens."""

    stream: StreamKey
    seq: int
    data: Any
    source: str | None = None
    attempt: int | None = None
    index: int | None = None


@dataclass(frozen=True)
class LiveDraft:
    """A live chunk on its way to the bus, which gives it its `seq` (ADR 0017).

    `positioned` says the producer named the chunk's place (a `source` and an explicit
    `index`): re-sending that place gets the same `seq`. Without it, every chunk is new.
    """

    stream: StreamKey
    data: Any
    source: str | None = None
    attempt: int | None = None
    index: int | None = None
    positioned: bool = False

    @property
    def position(self) -> LivePosition | None:
        if not self.positioned or self.source is None or self.index is None:
            return None
        return LivePosition(self.source, self.attempt, self.index)

    def numbered(self, seq: int) -> LiveChunk:
        return LiveChunk(self.stream, seq, self.data, self.source, self.attempt, self.index)


class WakeSubscription(Protocol):
    async def next(self, timeout: float) -> Wake | LiveChunk | None:
        """The next wake or live chunk, or None when `timeout` seconds pass without one.

        The queue behind it is bounded: overflowing wakes are coalesced into one
        wake without records (so the reader re-reads), overflowing live chunks
        are dropped (their `seq` shows the gap).
        """
        ...

    def interrupt(self) -> None:
        """Make a pending (or the next) `next()` return at once, as if it timed out."""
        ...

    def offer(self, taker: Callable[[Wake], bool] | None) -> None:
        """From now on (None: no longer), a wake pushed while nothing is queued is first
        handed to `taker`, synchronously, from the publisher's own call; a wake it takes
        (returns True) is not queued. Anything queued goes first: a wake is offered only
        when the queue is empty, so the order of wakes and chunks holds (ADR 0079)."""
        ...


class DirectSink(Protocol):
    """A reader's connection, written to straight from a publisher's call (ADR 0079)."""

    def ready(self) -> bool:
        """Whether what is written now reaches the reader whole, without waiting, and ahead
        of anything the reader's own task sends later: nothing of its own is buffered or in
        flight, and the connection neither pushes back nor closes."""
        ...

    def send_records(self, key: StreamKey, records: Sequence[StoredRecord]) -> None:
        """Write these records' frames, in order; only called when `ready()`."""
        ...


class WakeBus(Protocol):
    """Fan-out of wake signals and live chunks to readers in this process.

    `subscribe` registers before returning, so anything committed after the
    `async with` line is entered produces a wake for that subscription.

    Rules (ADR 0056):
    - chunks and the wakes that say closed reach every subscription in one order, the
      order in which their publishes and commits completed: a chunk whose
      `publish_live` returned before a close was committed comes before that close's
      wake, and a chunk published once the close has committed comes after it;
    - on any node: chunks published on one process and a close committed on another
      keep that order for the readers of every process.
    """

    def subscribe(
        self, key: StreamKey, live: bool = False
    ) -> AbstractAsyncContextManager[WakeSubscription]: ...

    async def publish_live(self, drafts: Sequence[LiveDraft]) -> None:
        """Best effort: never raises and never waits for readers. Returns once the
        chunks have their place in the order above (or were dropped), which may take a
        round trip to the database, bounded by its bounds.

        The bus numbers each chunk with its stream's `LiveSeq` at the point that orders
        chunks for every reader, so each reader, on any node, gets strictly rising
        `seq` for new chunks and a re-driven position's first `seq` (ADR 0017).
        """
        ...


class GapEvidence(Protocol):
    """Where readers report a wake that revealed missing sequences."""

    async def record_gap(self, key: StreamKey, expected: int, received: int) -> None: ...
