"""The compound cursor: its text round-trips, malformed text is `invalid_cursor`, text
past the bounds is `cursor_too_large` before it is parsed, and every cursor a run follow
may write fits the bounds (ADR 0073)."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from domain.cursor import MAX_SEQUENCE
from domain.errors import CursorTooLarge, InvalidCursor, InvalidIdentifier, TooManyStreamsToFollow
from domain.identifiers import ID_MAX_LENGTH
from domain.run_cursor import MAX_RUN_CURSOR_BYTES, MAX_RUN_CURSOR_STREAMS, RunCursor, fits
from domain.run_filter import RunFilter

ids = st.text(alphabet="abcXYZ019._:-", min_size=1, max_size=ID_MAX_LENGTH).filter(
    lambda value: value not in (".", ".."))
positions = st.dictionaries(ids, st.integers(0, MAX_SEQUENCE), max_size=MAX_RUN_CURSOR_STREAMS)


@given(positions)
def test_a_cursor_a_run_follow_may_write_reads_back_the_same(positions: dict[str, int]) -> None:
    cursor = RunCursor(positions)
    if not fits(positions):
        return
    again = RunCursor.parse(cursor.text())
    assert {s: again.at(s) for s in positions} == positions
    assert len(cursor.text()) <= MAX_RUN_CURSOR_BYTES


def test_the_text_is_sorted_and_leaves_zeros_out() -> None:
    assert RunCursor({"b": 2, "a": 7, "z": 0}).text() == "a=7,b=2"
    assert RunCursor.parse("").text() == ""
    assert RunCursor.parse(" b=2,a=7 ").at("a") == 7


@pytest.mark.parametrize("raw", ["5", "a", "a=", "=5", "a=-1", "a=1,a=2", "a=1,,b=2",
                                 "a=x", "a b=1", "a=1;b=2", ".=1", "a=" + "9" * 20,
                                 "é=1", "a=1,"])
def test_malformed_text_is_an_invalid_cursor(raw: str) -> None:
    with pytest.raises(InvalidCursor) as refused:
        RunCursor.parse(raw, "Last-Event-ID")
    assert refused.value.code == "invalid_cursor"
    assert refused.value.extra["field"] == "Last-Event-ID"


def test_text_past_the_bounds_is_too_large_before_it_is_parsed() -> None:
    with pytest.raises(CursorTooLarge) as refused:
        RunCursor.parse("x" * (MAX_RUN_CURSOR_BYTES + 1))  # not even a cursor: length first
    assert refused.value.code == "cursor_too_large"
    entries = ",".join(f"s{index}=1" for index in range(MAX_RUN_CURSOR_STREAMS + 1))
    with pytest.raises(CursorTooLarge):
        RunCursor.parse(entries)
    RunCursor.parse(",".join(f"s{index}=1" for index in range(MAX_RUN_CURSOR_STREAMS)))


def test_fits_counts_each_entry_at_its_widest() -> None:
    assert fits([f"s{index}" for index in range(MAX_RUN_CURSOR_STREAMS)])
    assert not fits([f"s{index}" for index in range(MAX_RUN_CURSOR_STREAMS + 1)])
    widest = ["x" * (ID_MAX_LENGTH - 2) + f"{index:02d}" for index in range(40)]
    assert not fits(widest)
    assert fits(widest[:27])


def test_the_filter_names_ids_and_a_content_class_in_its_pinned_spelling() -> None:
    wanted = RunFilter.parse("a, b", " Output.TEXT ")
    assert wanted.admits("a", "output.text") and not wanted.admits("c", "output.text")
    assert not wanted.admits("a", "tool.calls")
    with pytest.raises(InvalidIdentifier):
        RunFilter.parse("a,,b", None)
    with pytest.raises(InvalidIdentifier):
        RunFilter.parse(None, "no spaces")
    with pytest.raises(TooManyStreamsToFollow):
        RunFilter.parse(",".join(f"s{index}" for index in range(MAX_RUN_CURSOR_STREAMS + 1)),
                        None)
