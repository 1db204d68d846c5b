"""The exact cursor rule: `c` reads `sequence > c`; beyond head is future, a cursor whose
successor was pruned must resync."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from domain.cursor import MAX_SEQUENCE, check_cursor, parse_cursor
from domain.errors import CursorPruned, FutureCursor, InvalidCursor


@st.composite
def stream_windows(draw: st.DrawFn) -> tuple[int, int]:
    """(earliest, head) with 1 <= earliest <= head + 1: what a stream can look like."""
    head = draw(st.integers(0, 10_000))
    return draw(st.integers(1, head + 1)), head


@given(stream_windows(), st.data())
def test_a_cursor_from_earliest_minus_one_to_head_is_accepted(
        window: tuple[int, int], data: st.DataObject) -> None:
    earliest, head = window
    check_cursor(data.draw(st.integers(earliest - 1, head)), earliest, head)


@given(stream_windows(), st.integers(1, 1000))
def test_a_cursor_beyond_head_is_future(window: tuple[int, int], beyond: int) -> None:
    earliest, head = window
    with pytest.raises(FutureCursor) as refused:
        check_cursor(head + beyond, earliest, head)
    assert refused.value.extra == {"requested": head + beyond, "head": head}


@given(st.integers(1, 10_000), st.data())
def test_a_cursor_whose_successor_was_pruned_names_requested_earliest_and_latest(
        head: int, data: st.DataObject) -> None:
    earliest = data.draw(st.integers(2, head + 1))  # something was pruned
    cursor = data.draw(st.integers(0, earliest - 2))
    with pytest.raises(CursorPruned) as refused:
        check_cursor(cursor, earliest, head)
    assert (refused.value.requested, refused.value.earliest, refused.value.latest) == (
        cursor, earliest, head)


def test_the_edges_of_the_rule() -> None:
    check_cursor(0, 1, 0)  # new stream, read from the start
    check_cursor(4, 5, 9)  # first retained record is the next one
    check_cursor(9, 10, 9)  # everything pruned: the head cursor is still valid
    with pytest.raises(CursorPruned):
        check_cursor(3, 5, 9)
    with pytest.raises(FutureCursor):
        check_cursor(1, 1, 0)


def test_a_negative_cursor_is_invalid() -> None:
    with pytest.raises(InvalidCursor):
        check_cursor(-1, 1, 5)


@pytest.mark.parametrize(("raw", "value"), [
    (None, None), ("0", 0), ("42", 42), (" 7 ", 7), (str(MAX_SEQUENCE), MAX_SEQUENCE),
    ("007", 7),
])
def test_parse_accepts_absent_and_non_negative_integers(raw: str | None, value: int) -> None:
    assert parse_cursor(raw) == value


@pytest.mark.parametrize("raw", [
    "", " ", "-1", "+1", "1.0", "1e3", "abc", "0x10", "١٢", "²", "1 2",
    str(MAX_SEQUENCE + 1), "9" * 20,
])
def test_parse_refuses_garbage_naming_the_parameter(raw: str) -> None:
    with pytest.raises(InvalidCursor) as refused:
        parse_cursor(raw, "Last-Event-ID")
    assert refused.value.extra["field"] == "Last-Event-ID"


@given(st.integers(0, MAX_SEQUENCE))
def test_parse_reads_back_every_printed_sequence(value: int) -> None:
    assert parse_cursor(str(value)) == value


@given(st.text(max_size=25))
def test_parse_never_fails_other_than_invalid_cursor(raw: str) -> None:
    try:
        value = parse_cursor(raw)
    except InvalidCursor:
        return
    assert value is not None and 0 <= value <= MAX_SEQUENCE
