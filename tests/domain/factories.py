"""Builders for domain objects: a valid definition, a fresh stream, drafts of a given size.

Tests state only what matters to them; everything else is a valid default.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any, TypeVar

import pytest
from eventsourcing.domain import Aggregate

from domain.definition import StreamDefinition, build_definition
from domain.identifiers import StreamKey
from domain.object_intent import AuthorizationReceipt, ObjectIntent, ObjectPins
from domain.records import Draft
from domain.stream import Stream

NODE_REGION = "eu-1"
T0 = datetime(2030, 1, 1, tzinfo=UTC)
KEY = StreamKey("tenant-a", "run-1", "answer")
SHA_A = "a" * 64
SHA_B = "b" * 64


def definition(**fields: Any) -> StreamDefinition:
    raw: dict[str, Any] = {"stream_id": KEY.stream_id, "content_class": "output.text"}
    return build_definition(raw | fields, NODE_REGION)


def credit(**limits: Any) -> dict[str, Any]:
    """Credit pins small enough to reach every ceiling in a few appends."""
    return {"max_unread_items": 1000, "max_unread_bytes": 1_000_000,
            "max_total_items": 100_000, "max_total_bytes": 10_000_000} | limits


def stream(**fields: Any) -> Stream:
    return Stream.start(KEY, definition(**fields), T0)


def draft(size: int = 10, key: str | None = None) -> Draft:
    return Draft("application/json", size, payload={"n": size}, idempotency_key=key,
                 has_payload=True)


_STORED_OFFSETS: dict[int, tuple[Stream, dict[int, int]]] = {}
"""Per stream appended through `append` (by identity), the byte offset each of its records
would store: what a store hands back under the row lock."""


def append(target: Stream, *drafts: Draft, receipts: dict[str, int] | None = None
           ) -> tuple[int, ...]:
    """Plan and commit a batch the way the append use case does; returns its sequences."""
    plan = target.plan_append(list(drafts) or [draft()], receipts or {})
    target.append(plan)
    entry = _STORED_OFFSETS.get(id(target))
    if entry is None or entry[0] is not target:
        entry = _STORED_OFFSETS[id(target)] = (target, {})
    entry[1].update(zip((sequence for sequence, _ in plan.new), plan.offsets, strict=True))
    return plan.sequences


def stored_offset(target: Stream, sequence: int) -> int | None:
    """The offset record `sequence` of `target` stores, as the use cases read it: only when
    the stream needs it (None otherwise, or for a record `append` did not make)."""
    if not target.offset_needed(sequence):
        return None
    entry = _STORED_OFFSETS.get(id(target))
    return entry[1].get(sequence) if entry is not None and entry[0] is target else None


def ack(target: Stream, consumer_id: str, sequence: int, principal: str) -> bool:
    """Ack the way the ack use case does: with the acked record's stored offset."""
    return target.ack(consumer_id, sequence, principal, stored_offset(target, sequence))


def prune(target: Stream, through: int) -> int:
    """Prune the way the retention use case does: with the last pruned record's offset."""
    return target.prune(through, stored_offset(target, min(through, target.head)))


def pins(size: int = 100, sha256: str = SHA_A, key: str = "obj-1",
         content_type: str = "application/pdf", schema: str | None = None) -> ObjectPins:
    return ObjectPins(idempotency_key=key, sha256=sha256, size=size, content_type=content_type,
                      schema=schema)


RECEIPT = AuthorizationReceipt("alice", ("streams:write",), "token-1")


def intent(object_pins: ObjectPins | None = None, expires_at: datetime = T0) -> ObjectIntent:
    return ObjectIntent.prepare(KEY, object_pins or pins(), RECEIPT, expires_at, NODE_REGION)


Refusal = TypeVar("Refusal", bound=BaseException)


@contextmanager
def refused_unchanged(aggregate: Aggregate, error: type[Refusal]
                      ) -> Iterator[pytest.ExceptionInfo[Refusal]]:
    """Expect `error`, and that the aggregate (every attribute, pending events included)
    is exactly as before: a refused command changes nothing."""
    before = copy.deepcopy(vars(aggregate))
    with pytest.raises(error) as refused:
        yield refused
    assert vars(aggregate) == before


def replayed(events: Iterable[Any]) -> Any:
    """Rebuild an aggregate by folding `mutate` over its events, as a store would."""
    aggregate = None
    for domain_event in events:
        aggregate = domain_event.mutate(aggregate)
    return aggregate
