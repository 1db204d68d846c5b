"""Stream.ack: only declared consumers exist, a declaration may pin who acks it, acks only
advance and never beyond head; unread is measured from the slowest declared consumer."""

from __future__ import annotations

import pytest

from domain.definition import MAX_CONSUMERS
from domain.errors import (
    AckBeyondHead,
    AckRegression,
    Backpressure,
    ConsumerNotFound,
    ConsumerScope,
    InvalidDefinition,
    InvalidIdentifier,
)
from tests.domain.factories import (
    ack,
    append,
    credit,
    definition,
    draft,
    refused_unchanged,
    stream,
)


def test_declared_consumers_start_at_zero() -> None:
    target = stream(consumers=["ui", "audit"])
    assert target.acks == {"ui": 0, "audit": 0}


def test_an_undeclared_consumer_is_refused_and_nothing_is_registered() -> None:
    target = stream(consumers=["ui"])
    append(target, draft(), draft())
    with refused_unchanged(target, ConsumerNotFound) as refused:
        ack(target, "intruder", 0, "mallory")
    assert refused.value.code == "consumer_not_found"
    assert target.acks == {"ui": 0}


def test_a_stream_without_consumers_refuses_every_ack() -> None:
    target = stream()
    append(target, draft())
    with refused_unchanged(target, ConsumerNotFound):
        ack(target, "ui", 1, "alice")


def test_a_plain_declaration_may_be_acked_by_any_reader_and_is_never_owned() -> None:
    target = stream(consumers=["ui"])
    append(target, draft(), draft(), draft())
    assert ack(target, "ui", 1, "alice")
    assert ack(target, "ui", 2, "bob")  # the first acker took nothing
    assert target.acks == {"ui": 2}


def test_a_pinned_declaration_refuses_principals_it_does_not_list() -> None:
    target = stream(consumers=[{"id": "ui", "principals": ["alice"]}, "audit"])
    append(target, draft(), draft())
    with refused_unchanged(target, ConsumerScope) as refused:
        ack(target, "ui", 1, "bob")
    assert refused.value.code == "consumer_scope"
    assert ack(target, "ui", 1, "alice")
    assert ack(target, "audit", 1, "bob")


def test_a_pinned_declaration_refuses_even_an_ack_at_zero() -> None:
    target = stream(consumers=[{"id": "ui", "principals": ["alice"]}])
    with refused_unchanged(target, ConsumerScope):
        ack(target, "ui", 0, "bob")


def test_both_spellings_of_an_unpinned_declaration_are_one_definition() -> None:
    assert definition(consumers=[{"id": "ui"}]) == definition(consumers=["ui"])
    assert definition(consumers=[{"id": "ui", "principals": None}]).consumers == ("ui",)


@pytest.mark.parametrize("consumers", [
    [{"id": "ui", "principals": []}],
    [{"id": "ui", "principals": [""]}],
    [{"id": "bad id", "principals": ["alice"]}],
    [{"id": "ui", "principals": ["alice"], "extra": 1}],
    [{"principals": ["alice"]}],
    ["ui", {"id": "ui", "principals": ["alice"]}],
    [7],
])
def test_malformed_declarations_are_refused(consumers: list[object]) -> None:
    with pytest.raises((InvalidDefinition, InvalidIdentifier)):
        definition(consumers=consumers)


def test_declarations_are_bounded() -> None:
    definition(consumers=[f"c{number}" for number in range(MAX_CONSUMERS)])
    with pytest.raises(InvalidDefinition):
        definition(consumers=[f"c{number}" for number in range(MAX_CONSUMERS + 1)])


def test_acks_advance() -> None:
    target = stream(consumers=["ui"])
    append(target, draft(), draft(), draft())
    ack(target, "ui", 1, "alice")
    assert ack(target, "ui", 3, "alice")
    assert target.acks["ui"] == 3


def test_re_acking_the_current_value_is_accepted_and_changes_nothing() -> None:
    target = stream(consumers=["ui"])
    append(target, draft(), draft())
    ack(target, "ui", 2, "alice")
    target.collect_events()
    assert ack(target, "ui", 2, "alice") is False
    assert target.collect_events() == []


def test_an_ack_below_the_current_one_is_a_regression() -> None:
    target = stream(consumers=["ui"])
    append(target, draft(), draft(), draft())
    ack(target, "ui", 2, "alice")
    with refused_unchanged(target, AckRegression) as refused:
        ack(target, "ui", 1, "alice")
    assert refused.value.extra == {"acked": 2}


def test_a_negative_ack_is_refused() -> None:
    target = stream(consumers=["ui"])
    with refused_unchanged(target, AckRegression):
        ack(target, "ui", -1, "alice")


def test_an_ack_beyond_head_is_refused() -> None:
    target = stream(consumers=["ui"])
    append(target, draft(), draft())
    with refused_unchanged(target, AckBeyondHead) as refused:
        ack(target, "ui", 3, "alice")
    assert refused.value.extra == {"head": 2}


def test_consumers_are_independent() -> None:
    target = stream(consumers=["ui", "audit"])
    append(target, draft(), draft(), draft())
    ack(target, "ui", 3, "alice")
    ack(target, "audit", 1, "bob")
    assert target.acks == {"ui": 3, "audit": 1}


def test_acks_free_unread_credit_only_up_to_the_slowest_consumer() -> None:
    target = stream(consumers=["ui", "audit"], credit=credit())
    append(target, draft(10), draft(20), draft(30))
    ack(target, "ui", 3, "alice")
    assert (target.usage.unread_items, target.usage.unread_bytes) == (3, 60)
    ack(target, "audit", 1, "bob")
    assert (target.usage.unread_items, target.usage.unread_bytes) == (2, 50)
    ack(target, "audit", 3, "bob")
    assert (target.usage.unread_items, target.usage.unread_bytes) == (0, 0)


def test_a_stream_without_consumers_has_nothing_unread_and_no_unread_ceiling() -> None:
    target = stream(credit=credit(max_unread_items=2, max_unread_bytes=25))
    for _ in range(5):
        append(target, draft(10))
    append(target, draft(10), draft(10), draft(10))  # a batch above the unread ceiling, too
    assert (target.usage.unread_items, target.usage.unread_bytes) == (0, 0)
    assert target.head == 8


def test_backpressure_names_the_consumers_that_hold_it_and_the_ceiling() -> None:
    target = stream(consumers=["ui", "audit", "ops"], credit=credit(max_unread_items=2))
    append(target, draft(10), draft(10))
    ack(target, "ui", 2, "alice")
    with refused_unchanged(target, Backpressure) as refused:
        append(target, draft(10))
    assert refused.value.extra == {
        "retry_after_seconds": 1, "consumers": ["audit", "ops"], "unread_items": 2,
        "unread_bytes": 20, "max_unread_items": 2, "max_unread_bytes": 1_000_000}


def test_acks_are_accepted_on_closed_and_erased_streams() -> None:
    # A reader finishing a closed stream must still be able to record where it stopped.
    target = stream(consumers=["ui", "audit"])
    append(target, draft(), draft())
    target.close()
    assert ack(target, "ui", 2, "alice")
    target.erase()
    assert ack(target, "audit", 2, "bob")
