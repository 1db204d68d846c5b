"""Version-2 snapshots become counters: the loader puts back the unread records' sizes
and the head's byte offset, and the upcast derives everything else from them."""

from __future__ import annotations

from typing import Any

from domain.stream_upcasts import upcast_v2_v3
from tests.domain.factories import ack, append, draft, stream


def v2_state(**fields: Any) -> dict[str, Any]:
    """What a v2 snapshot holds of credit, with what its loader puts back."""
    return {"head": 6, "earliest": 3, "unread_floor": 2, "unread_bytes": 0,
            "acks": {"ui": 5, "audit": 2, "late": 0}, "head_offset": 1000,
            "unread_sizes": [3, 5, 7, 11]} | fields


def test_a_v2_window_becomes_counters_on_the_loaders_base() -> None:
    state = v2_state()
    upcast_v2_v3(state)
    assert "unread_sizes" not in state
    assert state["unread_bytes"] == 3 + 5 + 7 + 11  # from the sizes, not the stale counter
    assert state["head_offset"] == 1000  # the base the stored records share
    # Offsets through each ack: floor offset 1000 - 26 = 974, then the sizes above it.
    assert state["ack_offsets"] == {"ui": 974 + 3 + 5 + 7, "audit": 974, "late": None}


def test_an_upcast_stream_counts_on_as_one_that_always_had_offsets() -> None:
    live = stream(consumers=["ui", "audit"])
    append(live, draft(3), draft(4), draft(5), draft(6), draft(7), draft(8))
    ack(live, "audit", 2, "alice")
    ack(live, "ui", 5, "alice")
    state = {name: value for name, value in vars(live).items()
             if name not in ("ack_offsets", "_pending_events")}
    state |= {"unread_sizes": [5, 6, 7, 8], "head_offset": live.head_offset}
    upcast_v2_v3(state)
    assert state["unread_bytes"] == live.unread_bytes == 5 + 6 + 7 + 8
    assert state["ack_offsets"]["ui"] == live.ack_offsets["ui"] == 3 + 4 + 5 + 6 + 7
    assert state["ack_offsets"]["audit"] == live.ack_offsets["audit"] == 3 + 4
