"""The live `seq` rule (ADR 0017): new chunks rise strictly, a re-driven position keeps its
first number, two different chunks never share one."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from domain.live_seq import REMEMBERED_RUNS, LivePosition, LiveSeq


def at(index: int, source: str = "model_turn", attempt: int | None = 1) -> LivePosition:
    return LivePosition(source, attempt, index)


positions = st.one_of(
    st.none(),
    st.builds(LivePosition, st.sampled_from(["a", "b"]), st.sampled_from([None, 1, 2]),
              st.integers(0, 12)),
)


def test_chunks_without_a_position_count_from_one() -> None:
    assert LiveSeq().assign_all([None, None, None])[0] == [1, 2, 3]


def test_a_producer_alone_gets_dense_numbers_that_follow_its_index() -> None:
    seqs, state = LiveSeq().assign_all([at(0), at(1), at(2), at(5), at(6)])
    assert seqs == [1, 2, 3, 4, 5]
    assert len(state.runs) == 2  # a skipped index starts a new run


def test_a_re_driven_position_gets_its_first_number_and_changes_nothing() -> None:
    seqs, state = LiveSeq().assign_all([at(0), at(1), None, at(2)])
    again, after = state.assign_all([at(0), at(1), at(2)])
    assert again == [seqs[0], seqs[1], seqs[3]]
    assert after == state


def test_another_chunk_in_between_starts_a_new_run_above_everything() -> None:
    seqs, _ = LiveSeq().assign_all(
        [at(0), at(1), at(0, "other"), at(2), at(0, attempt=2), at(3)])
    assert seqs == [1, 2, 3, 4, 5, 6]


def test_a_late_index_is_a_new_chunk_above_everything() -> None:
    seqs, state = LiveSeq().assign_all([at(0), at(3), None])
    assert seqs == [1, 2, 3]
    assert state.assign(at(1))[0] == 4


def test_a_re_drive_older_than_the_remembered_runs_is_numbered_as_new() -> None:
    state = LiveSeq()
    first, state = state.assign(at(0))
    for n in range(REMEMBERED_RUNS):
        _, state = state.assign(at(0, source=f"s{n}"))
    again, _ = state.assign(at(0))
    assert again == state.next and again > first


@given(st.lists(positions, max_size=80))
def test_new_chunks_rise_strictly_and_no_two_positions_share_a_number(
        sequence: list[LivePosition | None]) -> None:
    state = LiveSeq()
    owner: dict[int, LivePosition | None] = {}
    highest = 0
    for position in sequence:
        seq, state = state.assign(position)
        if seq > highest:  # a new number, the next one
            assert seq == highest + 1
            owner[seq] = position
            highest = seq
        else:  # only ever a copy of the same position
            assert position is not None and owner.get(seq) == position
        assert state.next > highest and len(state.runs) <= REMEMBERED_RUNS


@given(st.lists(positions, max_size=REMEMBERED_RUNS))
def test_while_remembered_every_re_drive_gets_the_first_number(
        sequence: list[LivePosition | None]) -> None:
    state = LiveSeq()
    first: dict[LivePosition, int] = {}
    for position in sequence:
        seq, state = state.assign(position)
        if position is not None:
            assert first.setdefault(position, seq) == seq


@given(st.lists(positions, max_size=40), st.lists(positions, max_size=40))
def test_numbering_in_batches_is_numbering_one_by_one(
        head: list[LivePosition | None], tail: list[LivePosition | None]) -> None:
    whole, whole_state = LiveSeq().assign_all(head + tail)
    first, state = LiveSeq().assign_all(head)
    rest, rest_state = state.assign_all(tail)
    assert first + rest == whole and rest_state == whole_state
