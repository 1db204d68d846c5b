"""Stream lifecycle: close (idempotent), legal hold, prune (never while held), erase,
delete and expiry."""

from __future__ import annotations

from datetime import timedelta

import pytest

from domain.errors import NotFound, RunErased, StreamHeld
from tests.domain.factories import (
    T0,
    ack,
    append,
    definition,
    draft,
    prune,
    refused_unchanged,
    stream,
)

# -- close -------------------------------------------------------------------


def test_close_closes_once_and_is_idempotent() -> None:
    target = stream()
    append(target, draft())
    assert target.close() is True
    target.collect_events()
    assert target.close() is False
    assert target.collect_events() == []
    assert target.closed and target.head == 1


# -- legal hold --------------------------------------------------------------


def test_legal_hold_is_set_with_a_reason_and_released() -> None:
    target = stream()
    assert target.set_legal_hold(True, "case-42")
    assert (target.legal_hold, target.hold_reason) == (True, "case-42")
    assert target.set_legal_hold(False, None)
    assert (target.legal_hold, target.hold_reason) == (False, None)


def test_setting_the_same_hold_again_records_nothing() -> None:
    target = stream()
    target.set_legal_hold(True, "case-42")
    target.collect_events()
    assert target.set_legal_hold(True, "case-42") is False
    assert target.collect_events() == []


def test_changing_only_the_reason_is_recorded() -> None:
    target = stream()
    target.set_legal_hold(True, "case-42")
    assert target.set_legal_hold(True, "case-43")
    assert target.hold_reason == "case-43"


# -- prune -------------------------------------------------------------------


def test_prune_advances_earliest_and_returns_it() -> None:
    target = stream()
    append(target, draft(), draft(), draft(), draft())
    assert prune(target, 2) == 3
    assert target.earliest == 3


def test_prune_is_clamped_to_head() -> None:
    target = stream()
    append(target, draft(), draft())
    assert prune(target, 10) == 3
    assert (target.earliest, target.head) == (3, 2)


def test_pruning_below_earliest_changes_nothing() -> None:
    target = stream()
    append(target, draft(), draft(), draft())
    prune(target, 2)
    target.collect_events()
    assert prune(target, 1) == 3
    assert prune(target, 2) == 3
    assert prune(target, -5) == 3
    assert target.collect_events() == []


def test_pruning_an_empty_stream_changes_nothing() -> None:
    target = stream()
    target.collect_events()
    assert prune(target, 5) == 1
    assert target.collect_events() == []


def test_a_held_stream_is_never_pruned() -> None:
    target = stream()
    append(target, draft(), draft())
    target.set_legal_hold(True, "case")
    with refused_unchanged(target, StreamHeld) as refused:
        prune(target, 1)
    assert refused.value.code == "legal_hold"
    target.set_legal_hold(False, None)
    assert prune(target, 1) == 2


def test_pruned_records_no_longer_count_as_unread_but_still_count_in_totals() -> None:
    target = stream(consumers=["ui"])
    append(target, draft(10), draft(20), draft(30))
    prune(target, 2)
    assert (target.usage.unread_items, target.usage.unread_bytes) == (1, 30)
    assert (target.total_items, target.total_bytes) == (3, 60)


def test_sequences_continue_after_pruning() -> None:
    target = stream()
    append(target, draft(), draft())
    prune(target, 2)
    assert append(target, draft()) == (3,)


# -- erase -------------------------------------------------------------------


def test_erase_removes_every_record_and_seals_the_stream() -> None:
    target = stream()
    append(target, draft(), draft(), draft())
    assert target.erase() is True
    assert (target.erased, target.earliest, target.head) == (True, 4, 3)
    assert target.usage.unread_items == 0
    with refused_unchanged(target, RunErased):
        target.plan_append([draft()], {})


def test_erase_again_changes_nothing() -> None:
    target = stream()
    append(target, draft())
    target.erase()
    target.collect_events()
    assert target.erase() is False
    assert target.collect_events() == []


def test_a_held_stream_is_sealed_but_keeps_its_records() -> None:
    target = stream()
    append(target, draft(), draft())
    target.set_legal_hold(True, "case")
    assert target.erase() is False
    assert (target.erased, target.earliest, target.head) == (True, 1, 2)
    with refused_unchanged(target, RunErased):
        target.plan_append([draft()], {})


def test_erasing_a_held_stream_again_while_held_changes_nothing() -> None:
    target = stream()
    append(target, draft())
    target.set_legal_hold(True, "case")
    target.erase()
    target.collect_events()
    assert target.erase() is False
    assert target.collect_events() == []


def test_erase_after_the_hold_is_released_removes_the_records() -> None:
    target = stream()
    append(target, draft(), draft())
    target.set_legal_hold(True, "case")
    target.erase()
    target.set_legal_hold(False, None)
    assert target.erase() is True
    assert target.earliest == 3


def test_erase_after_the_hold_releases_what_open_intents_reserved_though_nothing_is_left() -> None:
    """Found by the stream machine: a held erasure keeps the open intents' reservations;
    once retention has pruned every record and the hold is released, erasing again must
    still release them (and tell the caller to abort the intents), or they hold the
    stream's total bytes for ever."""
    target = stream()
    target.reserve_object("o1", 1)
    append(target, draft(), draft(), draft())
    prune(target, 3)
    target.set_legal_hold(True, None)
    target.erase()
    assert target.reservations == {"o1": 1}
    target.set_legal_hold(False, None)
    assert target.erase() is True
    assert target.reservations == {} and target.usage.total_bytes == 30
    target.collect_events()
    assert target.erase() is False
    assert target.collect_events() == []


def test_an_empty_stream_can_be_erased() -> None:
    target = stream()
    assert target.erase() is True
    assert target.erased and target.earliest == 1


# -- delete ------------------------------------------------------------------


def test_delete_empties_and_closes_the_stream_keeping_its_head() -> None:
    target = stream()
    append(target, draft(), draft())
    assert target.delete() is True
    assert (target.deleted, target.erased, target.closed) == (True, True, True)
    assert (target.head, target.earliest, target.usage.unread_items) == (2, 3, 0)
    target.collect_events()
    assert target.delete() is False  # a repeat records nothing
    assert target.collect_events() == []


def test_a_deleted_stream_is_not_found_to_every_command() -> None:
    target = stream(consumers=["ui"])
    append(target, draft())
    target.delete()
    for command in (lambda: append(target, draft()), lambda: ack(target, "ui", 1, "alice"),
                    target.close, lambda: target.set_legal_hold(True, None),
                    lambda: target.reserve_object("o", 1)):
        with refused_unchanged(target, NotFound):
            command()


def test_a_held_stream_is_not_deleted() -> None:
    target = stream()
    append(target, draft())
    target.set_legal_hold(True, "case")
    with refused_unchanged(target, StreamHeld):
        target.delete()


# -- expiry ------------------------------------------------------------------


def test_expiry_counts_from_creation_and_a_stream_without_the_pin_never_expires() -> None:
    pinned = stream(expires_after_seconds=60)
    assert pinned.expires_at == T0 + timedelta(seconds=60)
    assert not pinned.expired(T0 + timedelta(seconds=59.999))
    assert pinned.expired(T0 + timedelta(seconds=60))
    with pytest.raises(NotFound):
        pinned.ensure_live(T0 + timedelta(seconds=60))
    forever = stream()
    assert forever.expires_at is None and not forever.expired(T0 + timedelta(days=3650))
    assert definition(expires_after_seconds=60) != definition()  # a pin like the others
