"""ObjectIntent: prepared → uploaded → committed, or aborted / expired; pins never move."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest

from domain.errors import (
    DigestMismatch,
    InvalidRecord,
    ObjectIntentConflict,
    ObjectNotUploaded,
    ObjectStateConflict,
    SizeMismatch,
    TooLarge,
)
from domain.identifiers import StreamKey, object_intent_id
from domain.object_intent import IntentState, ObjectIntent
from domain.records import OBJECT_MAX_BYTES, ObjectRef
from tests.domain.factories import (
    KEY,
    NODE_REGION,
    RECEIPT,
    SHA_A,
    SHA_B,
    T0,
    intent,
    pins,
    refused_unchanged,
)

Start = Callable[[], ObjectIntent]


def uploaded() -> ObjectIntent:
    prepared = intent(pins(size=100, sha256=SHA_A))
    prepared.record_upload(100, SHA_A)
    return prepared


def committed(sequence: int = 7) -> ObjectIntent:
    done = uploaded()
    done.commit(sequence)
    return done


# -- prepare -----------------------------------------------------------------


def test_prepare_pins_scope_body_receipt_expiry_and_region() -> None:
    prepared = intent(pins(size=100, sha256=SHA_A, key="o1", content_type="application/pdf",
                           schema="invoice/v1"), expires_at=T0)
    assert (prepared.tenant, prepared.run_id, prepared.stream_id) == (
        KEY.tenant, KEY.run_id, KEY.stream_id)
    assert (prepared.idempotency_key, prepared.sha256, prepared.size, prepared.content_type,
            prepared.schema) == ("o1", SHA_A, 100, "application/pdf", "invoice/v1")
    assert (prepared.principal, prepared.scopes, prepared.token_id) == (
        "alice", ["streams:write"], "token-1")
    assert (prepared.expires_at, prepared.region) == (T0, NODE_REGION)
    assert prepared.current_state is IntentState.PREPARED
    assert prepared.sequence is None
    assert prepared.stream_key == KEY


def test_the_object_key_is_derived_by_the_server_inside_the_stream_scope() -> None:
    prepared = intent(pins(key="../../etc/passwd"))
    assert prepared.object_key == (
        f"{KEY.tenant}/{KEY.run_id}/{KEY.stream_id}/{prepared.object_id}")
    assert "passwd" not in prepared.object_key


def test_the_same_idempotency_key_names_the_same_intent() -> None:
    first, again = intent(pins(key="o1")), intent(pins(key="o1"))
    assert first.id == again.id == object_intent_id(KEY, "o1")
    assert first.object_key == again.object_key
    assert intent(pins(key="o2")).id != first.id
    other_stream = ObjectIntent.prepare(StreamKey("tenant-a", "run-1", "other"), pins(key="o1"),
                                        RECEIPT, T0, NODE_REGION)
    assert other_stream.id != first.id


def test_the_reference_carries_what_a_reader_needs() -> None:
    prepared = intent(pins(size=5, sha256=SHA_B, content_type="text/csv"))
    assert prepared.reference == ObjectRef(prepared.object_id, 5, SHA_B, "text/csv")


@pytest.mark.parametrize(("changes", "error"), [
    ({"key": ""}, InvalidRecord),
    ({"key": "k" * 201}, InvalidRecord),
    ({"sha256": "A" * 64}, InvalidRecord),
    ({"sha256": "a" * 63}, InvalidRecord),
    ({"sha256": "g" * 64}, InvalidRecord),
    ({"size": -1}, InvalidRecord),
    ({"size": OBJECT_MAX_BYTES + 1}, TooLarge),
    ({"content_type": ""}, InvalidRecord),
    ({"content_type": "t" * 256}, InvalidRecord),
])
def test_invalid_pins_are_refused_at_prepare(changes: dict[str, Any],
                                             error: type[Exception]) -> None:
    with pytest.raises(error):
        intent(pins(**changes))


@pytest.mark.parametrize("size", [0, OBJECT_MAX_BYTES])
def test_empty_and_maximal_bodies_may_be_prepared(size: int) -> None:
    assert intent(pins(size=size)).size == size


def test_a_repeated_prepare_must_declare_the_same_body() -> None:
    prepared = intent(pins(size=100, sha256=SHA_A, content_type="a/b", schema="s"))
    prepared.ensure_same_pins(pins(size=100, sha256=SHA_A, content_type="a/b", schema="s"))
    for different in (pins(size=101, sha256=SHA_A, content_type="a/b", schema="s"),
                      pins(size=100, sha256=SHA_B, content_type="a/b", schema="s"),
                      pins(size=100, sha256=SHA_A, content_type="a/c", schema="s"),
                      pins(size=100, sha256=SHA_A, content_type="a/b", schema=None)):
        with refused_unchanged(prepared, ObjectIntentConflict):
            prepared.ensure_same_pins(different)


# -- upload ------------------------------------------------------------------


def test_matching_evidence_moves_to_uploaded() -> None:
    assert uploaded().current_state is IntentState.UPLOADED


def test_matching_evidence_again_is_accepted_and_records_nothing() -> None:
    done = uploaded()
    done.collect_events()
    done.record_upload(100, SHA_A)
    assert done.collect_events() == []
    assert done.current_state is IntentState.UPLOADED


@pytest.mark.parametrize("start", [intent, uploaded])
def test_a_size_mismatch_is_refused_and_leaves_the_state(start: Start) -> None:
    target = start()
    with refused_unchanged(target, SizeMismatch) as refused:
        target.record_upload(99, SHA_A)
    assert refused.value.extra == {"expected": 100, "actual": 99}


@pytest.mark.parametrize("start", [intent, uploaded])
def test_a_digest_mismatch_is_refused_and_leaves_the_state(start: Start) -> None:
    target = start()
    with refused_unchanged(target, DigestMismatch):
        target.record_upload(100, SHA_B)


def test_no_upload_after_commit_abort_or_expiry() -> None:
    aborted = intent(pins(size=100, sha256=SHA_A))
    aborted.abort()
    expired = intent(pins(size=100, sha256=SHA_A), expires_at=T0)
    expired.expire(T0)
    for target in (committed(), aborted, expired):
        with refused_unchanged(target, ObjectStateConflict):
            target.record_upload(100, SHA_A)


# -- commit ------------------------------------------------------------------


def test_commit_after_upload_records_the_sequence() -> None:
    done = committed(7)
    assert done.current_state is IntentState.COMMITTED
    assert done.sequence == 7


def test_a_duplicate_commit_returns_the_first_sequence() -> None:
    done = committed(7)
    done.collect_events()
    assert done.committed_sequence() == 7
    done.commit(9)
    assert done.sequence == 7
    assert done.collect_events() == []


def test_an_uploaded_intent_has_no_earlier_commit() -> None:
    assert uploaded().committed_sequence() is None


def test_commit_before_upload_is_refused() -> None:
    prepared = intent()
    with refused_unchanged(prepared, ObjectNotUploaded) as refused:
        prepared.commit(1)
    assert refused.value.code == "object_not_uploaded"


def test_nothing_commits_after_abort_or_expiry() -> None:
    aborted = uploaded()
    aborted.abort()
    expired = uploaded()
    expired.expire(T0)
    for target in (aborted, expired):
        with refused_unchanged(target, ObjectStateConflict):
            target.commit(1)
        with refused_unchanged(target, ObjectStateConflict):
            target.committed_sequence()


# -- abort -------------------------------------------------------------------


@pytest.mark.parametrize("start", [intent, uploaded])
def test_a_live_intent_can_be_aborted(start: Start) -> None:
    target = start()
    target.abort()
    assert target.current_state is IntentState.ABORTED


def test_aborting_twice_is_fine_and_records_nothing() -> None:
    target = intent()
    target.abort()
    target.collect_events()
    target.abort()
    assert target.collect_events() == []


def test_committed_and_expired_intents_cannot_be_aborted() -> None:
    expired = intent(expires_at=T0)
    expired.expire(T0)
    for target in (committed(), expired):
        with refused_unchanged(target, ObjectStateConflict):
            target.abort()


# -- expire ------------------------------------------------------------------


def test_an_intent_does_not_expire_before_its_deadline() -> None:
    target = intent(expires_at=T0)
    target.collect_events()
    assert target.expire(T0 - timedelta(microseconds=1)) is False
    assert target.current_state is IntentState.PREPARED
    assert target.collect_events() == []


@pytest.mark.parametrize("start", [intent, uploaded])
def test_a_live_intent_expires_once_its_deadline_is_reached(start: Start) -> None:
    target = start()
    assert target.expire(T0) is True
    assert target.current_state is IntentState.EXPIRED
    assert target.expire(T0 + timedelta(days=1)) is False


def test_committed_and_aborted_intents_never_expire() -> None:
    aborted = intent()
    aborted.abort()
    for target in (committed(), aborted):
        state = target.current_state
        assert target.expire(T0 + timedelta(days=365)) is False
        assert target.current_state is state
