"""`RunFollowState.accept` (sans-IO): the compound cursor it keeps, the duplicates it drops,
what each run-level end means (ADR 0073)."""

from __future__ import annotations

import json

import pytest
from runnel_client import ResyncRequired, RunFollowState, TokenExpired
from runnel_client.following import Refused, Unavailable
from runnel_client.run_following import RunEnded


def record(stream_id: str, sequence: int, **extra: object) -> str:
    return json.dumps({"stream_id": stream_id, "sequence": sequence,
                       "content_type": "application/json", "appended_at": "t",
                       "payload": sequence, **extra})


def test_the_cursor_moves_per_stream_and_a_repeat_is_dropped() -> None:
    state = RunFollowState({"b": 4})
    assert state.headers()["Last-Event-ID"] == "b=4"
    first = state.accept("record", record("a", 1))
    assert first is not None and first.stream_id == "a"
    assert state.accept("record", record("b", 4)) is None
    assert state.duplicates == 1
    assert state.accept("record", record("b", 5)) is not None
    assert state.cursor_text() == "a=1,b=5"
    assert "Last-Event-ID" not in RunFollowState().headers()


def test_live_chunks_follow_the_two_layer_rules_stream_by_stream() -> None:
    state = RunFollowState()
    chunk = {"seq": 1, "data": "x", "source": "k1", "attempt": 1, "index": 0}
    assert state.accept("record", record("a", 1, idempotency_key="k1")) is not None
    assert state.accept("live", json.dumps({"stream_id": "a", **chunk})) is None
    other = state.accept("live", json.dumps({"stream_id": "b", **chunk}))
    assert other is not None and other.stream_id == "b"


def test_ends_of_one_stream_and_of_the_run() -> None:
    state = RunFollowState()
    end = {"stream_id": "a", "reason": "closed", "last_sequence": 3}
    assert state.accept("end", json.dumps(end)) is None
    assert state.ended == {"a": 3}
    with pytest.raises(ResyncRequired) as resync:
        state.accept("resync", json.dumps({"code": "cursor_pruned", "stream_id": "b"}))
    assert resync.value.problem["stream_id"] == "b"
    cases: list[tuple[str, type[Exception]]] = [
        ("erased", RunEnded), ("token_expired", TokenExpired), ("token_revoked", Refused),
        ("shutdown", Unavailable), ("too_many_streams", Unavailable)]
    for reason, raised in cases:
        with pytest.raises(raised):
            state.accept("run_end", json.dumps({"reason": reason, "cursor": ""}))
