"""The producer rule (domain/producer_fencing.py) under arbitrary request orders: what it
accepts is, per epoch, exactly 0, 1, 2, … in order, epochs never go back, and a request
accepted once is a duplicate ever after (while its epoch is current)."""

from __future__ import annotations

from itertools import pairwise

import pytest
from hypothesis import given
from hypothesis import strategies as st

from domain.producer_fencing import (
    NewEpochNotAtZero,
    ProducerState,
    SequenceGap,
    StaleEpoch,
    admit,
)

requests = st.lists(st.tuples(st.integers(0, 3), st.integers(0, 5)), max_size=60)


@given(requests)
def test_accepted_batches_are_dense_per_epoch_and_epochs_only_advance(
        asked: list[tuple[int, int]]) -> None:
    state: ProducerState | None = None
    accepted: list[tuple[int, int]] = []
    for epoch, seq in asked:
        try:
            new = admit(state, epoch, seq)
        except (StaleEpoch, SequenceGap, NewEpochNotAtZero):
            continue
        if new:
            accepted.append((epoch, seq))
            state = ProducerState(epoch, seq)
        else:
            assert state is not None and epoch == state.epoch and seq <= state.last_seq
    for (epoch, seq), (next_epoch, next_seq) in pairwise(accepted):
        assert (next_epoch == epoch and next_seq == seq + 1) or (next_epoch > epoch
                                                                 and next_seq == 0)
    if accepted:
        assert accepted[0][1] == 0


@given(st.integers(0, 100), st.integers(0, 100))
def test_a_batch_accepted_once_is_a_duplicate_after(epoch: int, seq: int) -> None:
    state = ProducerState(epoch, seq)
    for earlier in range(seq + 1):
        assert admit(state, epoch, earlier) is False
    assert admit(state, epoch, seq + 1) is True
    if epoch:
        with pytest.raises(StaleEpoch) as fenced:
            admit(state, epoch - 1, 0)
        assert fenced.value.current == epoch


def test_the_refusals_say_what_is_expected() -> None:
    with pytest.raises(SequenceGap) as gap:
        admit(ProducerState(2, 4), 2, 7)
    assert (gap.value.expected, gap.value.received) == (5, 7)
    with pytest.raises(SequenceGap):
        admit(None, 0, 1)
    with pytest.raises(NewEpochNotAtZero):
        admit(ProducerState(2, 4), 3, 1)
    assert admit(ProducerState(2, 4), 3, 0) is True
