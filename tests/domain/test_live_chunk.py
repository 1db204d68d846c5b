"""Live chunks: the 7000-byte cap with its marker (their `seq`: test_live_seq.py)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from domain.canonical_json import compact_json
from domain.live_chunk import LIVE_CHUNK_MAX_BYTES, cap_chunk


def sized_text(total: int) -> str:
    """A JSON string whose compact encoding is exactly `total` bytes (quotes included)."""
    return "x" * (total - 2)


def test_the_cap_is_7000_serialized_bytes() -> None:
    assert LIVE_CHUNK_MAX_BYTES == 7000


def test_a_chunk_at_the_cap_passes_unchanged() -> None:
    chunk = sized_text(7000)
    assert len(compact_json(chunk)) == 7000
    assert cap_chunk(chunk) == chunk


def test_a_chunk_one_byte_over_is_replaced_by_the_marker_with_its_size() -> None:
    assert cap_chunk(sized_text(7001)) == {"_truncated": True, "bytes": 7001}


def test_the_size_is_compact_utf8_json() -> None:
    assert compact_json({"a": [1, 2]}) == b'{"a":[1,2]}'
    assert len(compact_json("é")) == 4  # two quotes + two UTF-8 bytes, not \\u00e9
    # 2333 three-byte characters + quotes = 7001 bytes although only 2333 characters.
    assert cap_chunk("€" * 2333) == {"_truncated": True, "bytes": 7001}


@given(st.text(max_size=3000))
def test_a_capped_chunk_always_fits_and_is_kept_whenever_it_fits(text: str) -> None:
    size = len(compact_json(text))
    capped = cap_chunk(text)
    assert len(compact_json(capped)) <= LIVE_CHUNK_MAX_BYTES
    assert capped == (text if size <= LIVE_CHUNK_MAX_BYTES else {"_truncated": True,
                                                                  "bytes": size})
