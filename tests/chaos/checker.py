"""The history checker of the fault suite: a recorded history in, the anomalies found out.

Pure and offline, modelled on what Jepsen's queue checkers look for. A history is
JSON lines, one event each:

- `{"kind": "append", "tenant", "stream", "producer", "key", "sent", "answered",
  "outcome": "ok" | "failed" | "unknown", "sequence"}`: one append attempt. `ok`
  carries the sequence the server acknowledged; `failed` is a definite refusal
  (nothing stored); `unknown` is a lost answer (a timeout, a 503, a reset);
- `{"kind": "reconnect", "subscriber", "connection", "tenant", "stream",
  "cursor"}`: a subscriber (re)connects with this cursor (`Last-Event-ID`);
- `{"kind": "frame", "subscriber", "connection", "tenant", "stream", "sequence",
  "key", "data_tenant"}`: one record frame it received. `tenant` is the
  subscriber's principal's tenant, `data_tenant` the tenant the producer wrote
  into the payload;
- `{"kind": "final", "tenant", "stream", "head", "records": [{"sequence", "key",
  "data_tenant"}]}`: the authoritative read after quiescing, one per stream, by
  a principal of `tenant`.

A stream is `(tenant, stream)`. What `check` flags, by `Anomaly.kind`:

| kind | meaning |
| --- | --- |
| lost | an acknowledged key is not stored |
| moved | an acknowledged key is stored at another sequence than acknowledged |
| duplicate | one key is stored more than once (unknown outcomes included) |
| phantom | a key is stored whose every attempt was a definite refusal |
| density | the stored sequences are not exactly 1..N, or head is not N |
| order | an append acknowledged before another was sent has the higher sequence |
| unordered | a subscriber's connection did not take sequences one by one, ascending |
| skipped | a reconnect's cursor is past what the subscriber had received |
| behind | a subscriber never reached the stream's head |
| mismatch | a frame's key is not the key stored at its sequence |
| tenant | a frame or the final read carries another tenant's data |
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

Stream = tuple[str, str]


@dataclass(frozen=True)
class Anomaly:
    kind: str
    stream: Stream
    detail: str


@dataclass
class _Subscriber:
    stream: Stream
    received: int = 0
    """The highest sequence received on any connection so far."""
    last_in_connection: dict[str, int] = field(default_factory=dict)


def parse(lines: Iterable[str]) -> list[dict[str, Any]]:
    return [json.loads(line) for line in lines if line.strip()]


def check(history: Iterable[Mapping[str, Any]]) -> list[Anomaly]:
    """Every anomaly of the history (empty: it is linearizable as a queue per stream)."""
    events = list(history)
    finals = {(e["tenant"], e["stream"]): e for e in events if e["kind"] == "final"}
    appends = [e for e in events if e["kind"] == "append"]
    anomalies: list[Anomaly] = []
    for stream, final in sorted(finals.items()):
        stored = _stored(final)
        mine = [a for a in appends if (a["tenant"], a["stream"]) == stream]
        anomalies += _storage(stream, final, stored, mine)
        anomalies += _realtime(stream, mine)
    anomalies += _subscribers(events, finals)
    return anomalies


def _stored(final: Mapping[str, Any]) -> dict[str, list[int]]:
    by_key: dict[str, list[int]] = defaultdict(list)
    for record in final["records"]:
        if record.get("key") is not None:
            by_key[record["key"]].append(record["sequence"])
    return by_key


def _storage(stream: Stream, final: Mapping[str, Any], stored: Mapping[str, list[int]],
             attempts: list[Mapping[str, Any]]) -> list[Anomaly]:
    found: list[Anomaly] = []
    sequences = [record["sequence"] for record in final["records"]]
    if sequences != list(range(1, len(sequences) + 1)) or final["head"] != len(sequences):
        found.append(Anomaly("density", stream, f"stored {_span(sequences)}, head "
                                                f"{final['head']}"))
    for record in final["records"]:
        if record.get("data_tenant", stream[0]) != stream[0]:
            found.append(Anomaly("tenant", stream, f"the final read holds {record['sequence']} "
                                                   f"of tenant {record['data_tenant']}"))
    outcomes: dict[str, set[str]] = defaultdict(set)
    acked: dict[str, set[int]] = defaultdict(set)
    for attempt in attempts:
        outcomes[attempt["key"]].add(attempt["outcome"])
        if attempt["outcome"] == "ok":
            acked[attempt["key"]].add(attempt["sequence"])
    for key, where in sorted(stored.items()):
        if len(where) > 1:
            found.append(Anomaly("duplicate", stream, f"{key!r} stored at {where}"))
        if outcomes.get(key) == {"failed"}:
            found.append(Anomaly("phantom", stream, f"{key!r} refused, yet stored at {where}"))
    for key, sequences_acked in sorted(acked.items()):
        if key not in stored:
            found.append(Anomaly("lost", stream, f"{key!r} acknowledged at "
                                                 f"{sorted(sequences_acked)}, not stored"))
        elif sequences_acked - set(stored[key]):
            found.append(Anomaly("moved", stream, f"{key!r} acknowledged at "
                                                  f"{sorted(sequences_acked)}, stored at "
                                                  f"{stored[key]}"))
    return found


def _realtime(stream: Stream, attempts: list[Mapping[str, Any]]) -> list[Anomaly]:
    """An append acknowledged before another was sent must have the lower sequence.
    Sorted by answer time, each acked append is compared with the highest sequence
    acknowledged strictly before it was sent (a sweep, not all pairs)."""
    acked = sorted((a for a in attempts if a["outcome"] == "ok"), key=lambda a: a["answered"])
    by_sent = sorted(acked, key=lambda a: a["sent"])
    found: list[Anomaly] = []
    highest: tuple[int, str] | None = None
    index = 0
    for attempt in by_sent:
        while index < len(acked) and acked[index]["answered"] < attempt["sent"]:
            earlier = acked[index]
            if highest is None or earlier["sequence"] > highest[0]:
                highest = (earlier["sequence"], earlier["key"])
            index += 1
        if highest is not None and highest[0] >= attempt["sequence"]:
            found.append(Anomaly("order", stream, f"{highest[1]!r} acknowledged at "
                                                  f"{highest[0]} before {attempt['key']!r} was "
                                                  f"sent, which got {attempt['sequence']}"))
    return found


def _subscribers(events: list[Mapping[str, Any]],
                 finals: Mapping[Stream, Mapping[str, Any]]) -> list[Anomaly]:
    found: list[Anomaly] = []
    subscribers: dict[str, _Subscriber] = {}
    keys_at = {stream: {r["sequence"]: r.get("key") for r in final["records"]}
               for stream, final in finals.items()}
    for event in events:
        if event["kind"] not in ("reconnect", "frame"):
            continue
        stream: Stream = (event["tenant"], event["stream"])
        sub = subscribers.setdefault(event["subscriber"], _Subscriber(stream))
        connection = event["connection"]
        if event["kind"] == "reconnect":
            if event["cursor"] > sub.received:
                found.append(Anomaly("skipped", stream, f"{event['subscriber']} reconnected "
                                                        f"after {event['cursor']} having "
                                                        f"received {sub.received}"))
            sub.last_in_connection[connection] = event["cursor"]
            continue
        sequence = event["sequence"]
        previous = sub.last_in_connection.get(connection, 0)
        if sequence != previous + 1:
            found.append(Anomaly("unordered", stream, f"{event['subscriber']} got {sequence} "
                                                      f"after {previous} on {connection}"))
        sub.last_in_connection[connection] = sequence
        sub.received = max(sub.received, sequence)
        if event.get("data_tenant", stream[0]) != stream[0]:
            found.append(Anomaly("tenant", stream, f"{event['subscriber']} got {sequence} of "
                                                   f"tenant {event['data_tenant']}"))
        stored_key = keys_at.get(stream, {}).get(sequence)
        if event.get("key") is not None and stored_key != event["key"]:
            found.append(Anomaly("mismatch", stream, f"{event['subscriber']} got "
                                                     f"{event['key']!r} at {sequence}, stored "
                                                     f"{stored_key!r}"))
    for name, sub in sorted(subscribers.items()):
        final = finals.get(sub.stream)
        if final is not None and sub.received < final["head"]:
            found.append(Anomaly("behind", sub.stream, f"{name} reached {sub.received} of "
                                                       f"{final['head']}"))
    return found


def _span(sequences: list[int]) -> str:
    if not sequences:
        return "nothing"
    return f"{len(sequences)} records {sequences[:3]}…{sequences[-3:]}"
