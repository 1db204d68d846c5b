"""The checker's self-test: histories of a correct service (generated from a plain model
of one) pass, and each anomaly injected into one is flagged as what it is, including the
one a bigserial-style reader produces when rows commit out of order."""

from __future__ import annotations

import copy
import itertools
import json
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.chaos.checker import check, parse

TENANTS = ("acme", "globex")
Event = dict[str, Any]


@st.composite
def histories(draw: st.DrawFn) -> list[Event]:
    """What a correct service records: per stream, producers append keys (some answers
    lost, some refused, each retried with its key until acknowledged); subscribers read
    in connections, resuming at or below what they received."""
    events: list[Event] = []
    clock = 0.0
    for tenant in TENANTS:
        stored: list[str] = []
        for number in range(draw(st.integers(1, 12))):
            key, producer = f"{tenant}-k{number}", f"p{number % 3}"
            for first in draw(st.lists(st.sampled_from(["refused", "lost", "unstored"]),
                                       max_size=2)):
                clock += 1
                if first == "lost" and key not in stored:
                    stored.append(key)
                events.append({"kind": "append", "tenant": tenant, "stream": "s",
                               "producer": producer, "key": key, "sent": clock,
                               "answered": clock + 0.5,
                               "outcome": "failed" if first == "refused" else "unknown"})
            if key not in stored:
                stored.append(key)
            clock += 1
            events.append({"kind": "append", "tenant": tenant, "stream": "s",
                           "producer": producer, "key": key, "sent": clock,
                           "answered": clock + 0.5, "outcome": "ok",
                           "sequence": stored.index(key) + 1})
        for reader in range(draw(st.integers(1, 3))):
            events += _reader(draw, tenant, f"{tenant}-sub{reader}", stored)
        events.append({"kind": "final", "tenant": tenant, "stream": "s", "head": len(stored),
                       "records": [{"sequence": n, "key": key, "data_tenant": tenant}
                                   for n, key in enumerate(stored, start=1)]})
    return events


def _reader(draw: st.DrawFn, tenant: str, name: str, stored: list[str]) -> list[Event]:
    events: list[Event] = []
    received, connection = 0, 0
    while received < len(stored):
        cursor = draw(st.integers(max(0, received - 2), received))  # at-least-once is fine
        connection += 1
        label = f"{name}/c{connection}"
        events.append({"kind": "reconnect", "subscriber": name, "connection": label,
                       "tenant": tenant, "stream": "s", "cursor": cursor})
        until = draw(st.integers(min(cursor + 1, len(stored)), len(stored)))
        for sequence in range(cursor + 1, until + 1):
            events.append({"kind": "frame", "subscriber": name, "connection": label,
                           "tenant": tenant, "stream": "s", "sequence": sequence,
                           "key": stored[sequence - 1], "data_tenant": tenant})
        received = max(received, until)
    return events


def kinds(history: list[Event]) -> set[str]:
    return {anomaly.kind for anomaly in check(history)}


@settings(max_examples=150, deadline=None)
@given(histories())
def test_a_correct_service_has_no_anomalies(history: list[Event]) -> None:
    assert check(history) == []


def _final(history: list[Event], tenant: str = "acme") -> Event:
    return next(e for e in history if e["kind"] == "final" and e["tenant"] == tenant)


def _acked(history: list[Event]) -> list[Event]:
    return [e for e in history if e["kind"] == "append" and e["outcome"] == "ok"
            and e["tenant"] == "acme"]


def lose_last_record(history: list[Event]) -> None:
    final = _final(history)
    final["records"].pop()
    final["head"] -= 1


def store_a_key_twice(history: list[Event]) -> None:
    final = _final(history)
    final["records"].append({**final["records"][0], "sequence": final["head"] + 1})
    final["head"] += 1


def move_an_acknowledgement(history: list[Event]) -> None:
    _acked(history)[0]["sequence"] = 10_000


def leave_a_hole(history: list[Event]) -> None:
    final = _final(history)
    final["records"][-1]["sequence"] += 1
    final["head"] += 1


def store_a_refused_key(history: list[Event]) -> None:
    final = _final(history)
    final["head"] += 1
    final["records"].append({"sequence": final["head"], "key": "never", "data_tenant": "acme"})
    history.append({"kind": "append", "tenant": "acme", "stream": "s", "producer": "p9",
                    "key": "never", "sent": 0.0, "answered": 0.1, "outcome": "failed"})


def reorder_in_real_time(history: list[Event]) -> None:
    acked = _acked(history)
    if len(acked) < 2:
        history.append(copy.deepcopy(acked[0]) | {"key": "late", "sent": 1e9,
                                                  "answered": 1e9 + 1})
        acked = _acked(history)
    first, second = acked[0], acked[-1]
    first["sequence"], second["sequence"] = second["sequence"], first["sequence"]


def skip_on_reconnect(history: list[Event]) -> None:
    reconnect = next(e for e in history if e["kind"] == "reconnect" and e["tenant"] == "acme")
    reconnect["cursor"] += 1


def drop_a_frame(history: list[Event]) -> None:
    """Lose one delivery: inside a connection (the next frame jumps), or the last one of
    a subscriber (it never reaches head, or its reconnect skips what it lacks)."""
    frames = [e for e in history if e["kind"] == "frame" and e["tenant"] == "acme"]
    inside = [a for a, b in itertools.pairwise(frames)
              if a["connection"] == b["connection"]]
    history.remove(inside[0] if inside else frames[-1])


def leak_another_tenants_frame(history: list[Event]) -> None:
    frame = next(e for e in history if e["kind"] == "frame" and e["tenant"] == "acme")
    frame["data_tenant"] = "globex"


def frame_of_another_key(history: list[Event]) -> None:
    frame = next(e for e in history if e["kind"] == "frame" and e["tenant"] == "acme")
    frame["key"] = "somebody-else"


INJECTIONS: dict[str, tuple[Callable[[list[Event]], None], set[str]]] = {
    "lost": (lose_last_record, {"lost"}),
    "duplicate": (store_a_key_twice, {"duplicate"}),
    "moved": (move_an_acknowledgement, {"moved"}),
    "density": (leave_a_hole, {"density"}),
    "phantom": (store_a_refused_key, {"phantom"}),
    "order": (reorder_in_real_time, {"order"}),
    "skipped": (skip_on_reconnect, {"skipped"}),
    "dropped frame": (drop_a_frame, {"unordered", "skipped", "behind"}),
    "tenant": (leak_another_tenants_frame, {"tenant"}),
    "mismatch": (frame_of_another_key, {"mismatch"}),
}


@pytest.mark.parametrize("injected", sorted(INJECTIONS))
@settings(max_examples=40, deadline=None)
@given(history=histories())
def test_each_injected_anomaly_is_flagged(injected: str, history: list[Event]) -> None:
    inject, flagged_as = INJECTIONS[injected]
    inject(history)
    assert kinds(history) & flagged_as


def test_a_subscriber_that_stops_short_of_head_is_behind() -> None:
    history = [
        {"kind": "append", "tenant": "acme", "stream": "s", "producer": "p", "key": "a",
         "sent": 1, "answered": 2, "outcome": "ok", "sequence": 1},
        {"kind": "append", "tenant": "acme", "stream": "s", "producer": "p", "key": "b",
         "sent": 3, "answered": 4, "outcome": "ok", "sequence": 2},
        {"kind": "reconnect", "subscriber": "r", "connection": "c1", "tenant": "acme",
         "stream": "s", "cursor": 0},
        {"kind": "frame", "subscriber": "r", "connection": "c1", "tenant": "acme",
         "stream": "s", "sequence": 1, "key": "a", "data_tenant": "acme"},
        {"kind": "final", "tenant": "acme", "stream": "s", "head": 2,
         "records": [{"sequence": 1, "key": "a"}, {"sequence": 2, "key": "b"}]},
    ]
    assert kinds(history) == {"behind"}


def bigserial_reader_history() -> list[Event]:
    """Two transactions take ids 1 and 2 from a sequence; 2 commits first. A reader that
    polls `WHERE id > cursor` sees 2, moves its cursor past 1, and never sees 1: the
    gap a dense sequence assigned under the stream lock exists to prevent."""
    committed: list[int] = []
    events: list[Event] = [
        {"kind": "append", "tenant": "acme", "stream": "s", "producer": "p1", "key": "one",
         "sent": 1, "answered": 5, "outcome": "ok", "sequence": 1},
        {"kind": "append", "tenant": "acme", "stream": "s", "producer": "p2", "key": "two",
         "sent": 2, "answered": 3, "outcome": "ok", "sequence": 2},
        {"kind": "reconnect", "subscriber": "poller", "connection": "c1", "tenant": "acme",
         "stream": "s", "cursor": 0},
    ]
    cursor = 0
    for commit in (2, 1):  # id 2's transaction commits before id 1's
        committed.append(commit)
        for row in sorted(n for n in committed if n > cursor):
            events.append({"kind": "frame", "subscriber": "poller", "connection": "c1",
                           "tenant": "acme", "stream": "s", "sequence": row,
                           "key": {1: "one", 2: "two"}[row], "data_tenant": "acme"})
            cursor = row
    events.append({"kind": "final", "tenant": "acme", "stream": "s", "head": 2,
                   "records": [{"sequence": 1, "key": "one"}, {"sequence": 2, "key": "two"}]})
    return events


def test_a_bigserial_reader_that_skips_rows_committed_out_of_order_is_flagged() -> None:
    found = check(bigserial_reader_history())
    assert [anomaly.kind for anomaly in found] == ["unordered"]
    assert "got 2 after 0" in found[0].detail


def test_histories_are_read_from_json_lines() -> None:
    lines = [json.dumps(event) for event in bigserial_reader_history()] + [""]
    assert parse(lines) == bigserial_reader_history()
