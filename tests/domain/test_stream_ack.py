"""Stream.ack: consumers register on first ack (or from the definition), acks only advance,
never beyond head, and a consumer belongs to the principal that first acked it."""

from __future__ import annotations

from domain.definition import MAX_CONSUMERS
from domain.errors import AckBeyondHead, AckRegression, ConsumerScope, TooManyConsumers
from tests.domain.factories import append, credit, draft, refused_unchanged, stream


def test_consumers_of_the_definition_start_at_zero_unowned() -> None:
    target = stream(consumers=["ui", "audit"])
    assert target.status.consumers == {"ui": 0, "audit": 0}
    assert target.owners == {"ui": None, "audit": None}


def test_the_first_ack_registers_a_new_consumer_to_the_acking_principal() -> None:
    target = stream()
    append(target, draft(), draft())
    assert target.ack("ui", 1, "alice")
    assert target.acks == {"ui": 1}
    assert target.owners == {"ui": "alice"}


def test_the_first_ack_of_a_defined_consumer_claims_it_even_at_zero() -> None:
    target = stream(consumers=["ui"])
    assert target.ack("ui", 0, "alice")
    assert target.owners["ui"] == "alice"
    with refused_unchanged(target, ConsumerScope):
        target.ack("ui", 0, "bob")


def test_acks_advance() -> None:
    target = stream()
    append(target, draft(), draft(), draft())
    target.ack("ui", 1, "alice")
    assert target.ack("ui", 3, "alice")
    assert target.acks["ui"] == 3


def test_re_acking_the_current_value_is_accepted_and_changes_nothing() -> None:
    target = stream()
    append(target, draft(), draft())
    target.ack("ui", 2, "alice")
    target.collect_events()
    assert target.ack("ui", 2, "alice") is False
    assert target.collect_events() == []


def test_an_ack_below_the_current_one_is_a_regression() -> None:
    target = stream()
    append(target, draft(), draft(), draft())
    target.ack("ui", 2, "alice")
    with refused_unchanged(target, AckRegression) as refused:
        target.ack("ui", 1, "alice")
    assert refused.value.extra == {"acked": 2}


def test_a_negative_ack_is_refused() -> None:
    target = stream(consumers=["ui"])
    with refused_unchanged(target, AckRegression):
        target.ack("ui", -1, "alice")


def test_an_ack_beyond_head_is_refused() -> None:
    target = stream()
    append(target, draft(), draft())
    with refused_unchanged(target, AckBeyondHead) as refused:
        target.ack("ui", 3, "alice")
    assert refused.value.extra == {"head": 2}
    assert "ui" not in target.acks


def test_another_principal_may_not_ack_a_consumer_it_does_not_own() -> None:
    target = stream()
    append(target, draft(), draft())
    target.ack("ui", 1, "alice")
    with refused_unchanged(target, ConsumerScope) as refused:
        target.ack("ui", 2, "bob")
    assert refused.value.code == "consumer_scope"
    assert target.ack("ui", 2, "alice")


def test_consumers_are_independent() -> None:
    target = stream()
    append(target, draft(), draft(), draft())
    target.ack("ui", 3, "alice")
    target.ack("audit", 1, "bob")
    assert target.acks == {"ui": 3, "audit": 1}


def test_acks_free_unread_credit_only_up_to_the_slowest_consumer() -> None:
    target = stream(consumers=["ui", "audit"], credit=credit())
    append(target, draft(10), draft(20), draft(30))
    target.ack("ui", 3, "alice")
    assert (target.usage.unread_items, target.usage.unread_bytes) == (3, 60)
    target.ack("audit", 1, "bob")
    assert (target.usage.unread_items, target.usage.unread_bytes) == (2, 50)
    target.ack("audit", 3, "bob")
    assert (target.usage.unread_items, target.usage.unread_bytes) == (0, 0)


def test_a_late_consumer_does_not_take_back_credit_already_freed() -> None:
    # Credit once granted is never revoked: records freed by every known consumer stay
    # freed when a new consumer registers lower.
    target = stream()
    append(target, draft(10), draft(10), draft(10))
    target.ack("ui", 3, "alice")
    target.ack("late", 1, "bob")
    assert target.usage.unread_items == 0
    assert target.unread_floor == 3


def test_acks_are_accepted_on_closed_and_erased_streams() -> None:
    # A reader finishing a closed stream must still be able to record where it stopped.
    target = stream()
    append(target, draft(), draft())
    target.close()
    assert target.ack("ui", 2, "alice")
    target.erase()
    assert target.ack("audit", 2, "bob")


def test_consumers_registered_by_ack_are_bounded_like_those_of_the_definition() -> None:
    target = stream()
    for number in range(MAX_CONSUMERS):
        target.ack(f"c{number}", 0, "alice")
    with refused_unchanged(target, TooManyConsumers):
        target.ack("one-more", 0, "alice")
    assert target.ack("c0", 0, "alice") is False
