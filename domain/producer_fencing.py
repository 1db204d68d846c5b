"""Idempotent producers of the Durable Streams facade (ADR 0041): whether a batch
`(epoch, seq)` of a producer is new, a duplicate, or refused, given its state.

Rule: an epoch below the producer's is fenced; a higher epoch starts at seq 0; within the
epoch, a seq at or below the last accepted is a duplicate, the next one is new, and any
other is a gap.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ProducerState:
    epoch: int
    last_seq: int


class StaleEpoch(Exception):
    def __init__(self, current: int) -> None:
        super().__init__(f"producer epoch is stale; current epoch {current}")
        self.current = current


class SequenceGap(Exception):
    def __init__(self, expected: int, received: int) -> None:
        super().__init__(f"producer sequence gap: expected {expected}, received {received}")
        self.expected = expected
        self.received = received


class NewEpochNotAtZero(Exception):
    """A producer's new epoch must start at sequence 0."""


def admit(state: ProducerState | None, epoch: int, seq: int) -> bool:
    """True: a new batch, to be stored (then the state is `(epoch, seq)`); False: a
    duplicate of one stored before. Raises for a fenced epoch, a gap, a bad new epoch."""
    if state is not None and epoch < state.epoch:
        raise StaleEpoch(state.epoch)
    if state is None or epoch > state.epoch:
        if seq == 0:
            return True
        if state is None:
            raise SequenceGap(0, seq)
        raise NewEpochNotAtZero()
    if seq <= state.last_seq:
        return False
    if seq > state.last_seq + 1:
        raise SequenceGap(state.last_seq + 1, seq)
    return True
