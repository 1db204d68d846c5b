"""The `seq` of best-effort live chunks (ADR 0017).

One `LiveSeq` per stream numbers its chunks in the order every reader receives them
(the bus applies it where that order is decided: in the NOTIFY transaction, under a
per-stream row lock). The rule:

- a chunk without a position gets the next number;
- a chunk with a position (`source`, `attempt`, `index`) that an earlier chunk already
  had gets that chunk's number again: a re-driven position is a copy, and a reader's
  keep-first de-duplication by `seq` drops it;
- otherwise it gets the next number, above every number given so far.

So two different chunks never share a number, and the numbers of new chunks rise
strictly and densely (a reader that misses one sees the gap). Positions are
remembered by run, the newest `REMEMBERED_RUNS` of them: a re-drive older than that
is numbered as a new chunk (shown twice, never lost).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

REMEMBERED_RUNS = 32


@dataclass(frozen=True)
class LivePosition:
    """Where a producer's chunk sits: the `index`-th chunk of `attempt` of `source`."""

    source: str
    attempt: int | None
    index: int


@dataclass(frozen=True)
class LiveRun:
    """Chunks of one producer attempt that followed each other on the stream with
    consecutive indexes: index `first`..`last` are numbered `base`..`base + last - first`.
    Remembering runs, not chunks, keeps the state small: one run per producer turn."""

    source: str
    attempt: int | None
    first: int
    last: int
    base: int

    def holds(self, position: LivePosition) -> bool:
        return self.same_producer(position) and self.first <= position.index <= self.last

    def same_producer(self, position: LivePosition) -> bool:
        return self.source == position.source and self.attempt == position.attempt

    def seq_of(self, index: int) -> int:
        return self.base + index - self.first


@dataclass(frozen=True)
class LiveSeq:
    """The numbering state of one stream's live chunks."""

    next: int = 1
    """The number the next new chunk gets; numbers start at 1."""
    runs: tuple[LiveRun, ...] = ()
    """Oldest first, at most `REMEMBERED_RUNS`."""
    growing: bool = False
    """The newest run holds the newest number, so its producer's next index extends it."""

    def assign(self, position: LivePosition | None) -> tuple[int, LiveSeq]:
        """The chunk's `seq`, and the state after it."""
        if position is None:
            return self.next, replace(self, next=self.next + 1, growing=False)
        for run in self.runs:  # oldest first: a position keeps its first number
            if run.holds(position):
                return run.seq_of(position.index), self
        if self._extends(position):
            *older, newest = self.runs
            seq = newest.seq_of(position.index)
            grown = replace(newest, last=position.index)
            return seq, replace(self, next=seq + 1, runs=(*older, grown))
        run = LiveRun(position.source, position.attempt, position.index, position.index,
                      self.next)
        runs = (*self.runs, run)[-REMEMBERED_RUNS:]
        return self.next, LiveSeq(self.next + 1, runs, growing=True)

    def assign_all(self, positions: list[LivePosition | None]) -> tuple[list[int], LiveSeq]:
        state, seqs = self, []
        for position in positions:
            seq, state = state.assign(position)
            seqs.append(seq)
        return seqs, state

    def _extends(self, position: LivePosition) -> bool:
        # Only the very next index: the run's numbers stay dense, and the index is not
        # held by another run (`assign` looked), so each position keeps one number.
        if not self.growing or not self.runs:
            return False
        newest = self.runs[-1]
        return newest.same_producer(position) and position.index == newest.last + 1
