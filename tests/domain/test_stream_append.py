"""Stream.plan_append/append: dense sequences, idempotency, credit, closed and erased streams."""

from __future__ import annotations

import pytest

from domain.errors import (
    Backpressure,
    InvalidRecord,
    QuotaExhausted,
    RunErased,
    StreamClosed,
    TooLarge,
)
from domain.stream import MAX_BATCH
from tests.domain.factories import ack, append, credit, draft, prune, refused_unchanged, stream


def test_a_new_stream_is_empty() -> None:
    fresh = stream()
    assert (fresh.head, fresh.earliest, fresh.total_items, fresh.total_bytes) == (0, 1, 0, 0)
    assert not (fresh.closed or fresh.legal_hold or fresh.erased)


def test_sequences_are_dense_from_head_plus_one() -> None:
    target = stream()
    assert append(target, draft(), draft(), draft()) == (1, 2, 3)
    assert append(target, draft()) == (4,)
    assert target.head == 4


def test_an_append_counts_items_and_bytes() -> None:
    target = stream(consumers=["ui"])
    append(target, draft(10), draft(25))
    assert (target.total_items, target.total_bytes) == (2, 35)
    assert (target.usage.unread_items, target.usage.unread_bytes) == (2, 35)


def test_planning_alone_changes_nothing() -> None:
    target = stream()
    plan = target.plan_append([draft(), draft()], {})
    assert plan.sequences == (1, 2)
    assert target.head == 0


def test_a_plan_made_on_an_older_state_is_refused() -> None:
    target = stream()
    stale = target.plan_append([draft()], {})
    append(target, draft())
    with pytest.raises(ValueError, match="stale"):
        target.append(stale)
    assert target.head == 1


def test_a_used_idempotency_key_returns_its_original_sequence_and_stores_nothing() -> None:
    target = stream()
    append(target, draft(key="k1"), draft(key="k2"))
    events_before = len(target.pending_events)
    plan = target.plan_append([draft(key="k1"), draft(key="k2")], {"k1": 1, "k2": 2})
    target.append(plan)
    assert plan.sequences == (1, 2)
    assert plan.all_duplicates
    assert plan.duplicates == (0, 1)
    assert target.head == 2
    assert len(target.pending_events) == events_before


def test_a_batch_mixing_used_and_new_keys_stores_only_the_new_ones_densely() -> None:
    target = stream()
    append(target, draft(key="k1"), draft(), draft(key="k3"))
    plan = target.plan_append([draft(key="k3"), draft(key="new"), draft(), draft(key="k1")],
                              {"k1": 1, "k3": 3})
    target.append(plan)
    assert plan.sequences == (3, 4, 5, 1)
    assert [sequence for sequence, _ in plan.new] == [4, 5]
    assert plan.duplicates == (0, 3)
    assert target.head == 5


def test_a_key_repeated_inside_one_batch_is_stored_once() -> None:
    target = stream()
    plan = target.plan_append([draft(key="k"), draft(), draft(key="k")], {})
    target.append(plan)
    assert plan.sequences == (1, 2, 1)
    assert [sequence for sequence, _ in plan.new] == [1, 2]
    assert plan.duplicates == (2,)  # the first of the batch is stored, the repeat is marked
    assert target.total_items == 2


def test_a_batch_without_used_keys_marks_no_duplicate() -> None:
    plan = stream().plan_append([draft(key="a"), draft(), draft()], {"b": 7})
    assert plan.duplicates == ()


def test_credit_counts_new_drafts_only() -> None:
    target = stream(credit=credit(max_unread_items=2))
    append(target, draft(key="a"), draft(key="b"))
    # Both are duplicates: the unread ceiling is full, yet the retry is answered.
    plan = target.plan_append([draft(key="a"), draft(key="b")], {"a": 1, "b": 2})
    assert plan.sequences == (1, 2)


def test_an_empty_batch_is_invalid() -> None:
    target = stream()
    with refused_unchanged(target, InvalidRecord):
        target.plan_append([], {})


def test_a_batch_over_the_batch_limit_is_too_large() -> None:
    target = stream()
    with refused_unchanged(target, TooLarge):
        target.plan_append([draft(0)] * (MAX_BATCH + 1), {})
    assert target.plan_append([draft(0)] * MAX_BATCH, {}).sequences[-1] == MAX_BATCH


def test_the_unread_items_ceiling_answers_backpressure() -> None:
    target = stream(consumers=["ui"], credit=credit(max_unread_items=3))
    append(target, draft(), draft(), draft())
    with refused_unchanged(target, Backpressure) as refused:
        target.plan_append([draft()], {})
    assert refused.value.code == "backpressure"


def test_the_unread_bytes_ceiling_answers_backpressure() -> None:
    target = stream(consumers=["ui"], credit=credit(max_unread_bytes=100))
    append(target, draft(60))
    with refused_unchanged(target, Backpressure):
        target.plan_append([draft(41)], {})
    assert append(target, draft(40)) == (2,)


def test_unread_is_counted_after_the_slowest_consumer_ack() -> None:
    target = stream(consumers=["ui", "audit"], credit=credit(max_unread_items=3))
    append(target, draft(), draft(), draft())
    ack(target, "ui", 3, "alice")
    with refused_unchanged(target, Backpressure):  # audit has read nothing yet
        target.plan_append([draft()], {})
    ack(target, "audit", 2, "bob")
    assert target.usage.unread_items == 1
    assert append(target, draft(), draft()) == (4, 5)
    with refused_unchanged(target, Backpressure):
        target.plan_append([draft()], {})


def test_pruning_frees_unread_credit_that_no_consumer_has_acked() -> None:
    target = stream(consumers=["ui"], credit=credit(max_unread_items=3, max_unread_bytes=30))
    append(target, draft(10), draft(10), draft(10))
    with refused_unchanged(target, Backpressure):
        target.plan_append([draft(1)], {})
    prune(target, 2)
    assert (target.usage.unread_items, target.usage.unread_bytes) == (1, 10)
    assert append(target, draft(10), draft(10)) == (4, 5)


def test_without_consumers_nothing_waits_so_only_the_totals_bound_a_stream() -> None:
    target = stream(credit=credit(max_unread_items=3, max_unread_bytes=30, max_total_items=6))
    append(target, draft(10), draft(10), draft(10))
    assert append(target, draft(10), draft(10), draft(10)) == (4, 5, 6)
    with refused_unchanged(target, QuotaExhausted):
        target.plan_append([draft(1)], {})


def test_the_total_items_ceiling_is_quota_exhausted_and_acking_does_not_help() -> None:
    target = stream(consumers=["ui"], credit=credit(max_total_items=3))
    append(target, draft(), draft(), draft())
    ack(target, "ui", 3, "alice")
    with refused_unchanged(target, QuotaExhausted) as refused:
        target.plan_append([draft()], {})
    assert refused.value.code == "quota_exhausted"


def test_the_total_bytes_ceiling_is_quota_exhausted() -> None:
    target = stream(credit=credit(max_total_bytes=50))
    append(target, draft(50))
    with refused_unchanged(target, QuotaExhausted):
        target.plan_append([draft(1)], {})
    assert append(target, draft(0)) == (2,)


def test_the_quota_counts_pruned_records_too() -> None:
    target = stream(credit=credit(max_total_items=2))
    append(target, draft(), draft())
    prune(target, 2)
    with refused_unchanged(target, QuotaExhausted):
        target.plan_append([draft()], {})


def test_a_batch_that_could_never_fit_the_unread_ceiling_is_too_large() -> None:
    target = stream(consumers=["ui"], credit=credit(max_unread_items=2, max_unread_bytes=100))
    with refused_unchanged(target, TooLarge):
        target.plan_append([draft(), draft(), draft()], {})
    with refused_unchanged(target, TooLarge):
        target.plan_append([draft(101)], {})


def test_a_rejected_batch_stores_none_of_its_records() -> None:
    target = stream(consumers=["ui"], credit=credit(max_unread_items=3))
    append(target, draft(), draft())
    with refused_unchanged(target, Backpressure):
        target.plan_append([draft(key="x"), draft(key="y")], {})
    # The keys of the refused batch were not used: they are new next time.
    ack(target, "ui", 2, "alice")
    assert append(target, draft(key="x"), draft(key="y")) == (3, 4)


def test_a_closed_stream_refuses_new_records_but_answers_duplicates() -> None:
    target = stream()
    append(target, draft(key="k"))
    target.close()
    with refused_unchanged(target, StreamClosed):
        target.plan_append([draft()], {})
    assert target.plan_append([draft(key="k")], {"k": 1}).sequences == (1,)


def test_an_erased_stream_refuses_new_records_even_when_closed() -> None:
    target = stream()
    append(target, draft())
    target.close()
    target.erase()
    with refused_unchanged(target, RunErased) as refused:
        target.plan_append([draft()], {})
    assert refused.value.code == "run_erased"


def test_an_erased_stream_refuses_even_a_retry_of_an_old_key() -> None:
    # SPEC §3: an append in an erased run is 410, whatever the receipts table still holds.
    target = stream()
    append(target, draft(key="k"))
    target.erase()
    with refused_unchanged(target, RunErased):
        target.plan_append([draft(key="k")], {"k": 1})


def test_zero_byte_records_still_count_as_items() -> None:
    target = stream(consumers=["ui"], credit=credit(max_unread_items=2))
    append(target, draft(0), draft(0))
    with refused_unchanged(target, Backpressure):
        target.plan_append([draft(0)], {})
