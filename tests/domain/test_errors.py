"""Every refusal has a stable machine `code`; clients match on it, so it must not drift."""

from __future__ import annotations

import pytest

from domain import errors
from domain.errors import Backpressure, CursorPruned, DomainError

# The codes SPEC §3 and §12 promise, by error class.
SPEC_CODES = {
    "FutureCursor": "future_cursor",
    "CursorPruned": "cursor_pruned",
    "Unauthenticated": "unauthenticated",
    "Forbidden": "forbidden",
    "NotFound": "not_found",
    "DefinitionConflict": "definition_conflict",
    "StreamClosed": "stream_closed",
    "QuotaExhausted": "quota_exhausted",
    "Backpressure": "backpressure",
    "AckRegression": "ack_regression",
    "AckBeyondHead": "ack_beyond_head",
    "ConsumerScope": "consumer_scope",
    "TooLarge": "too_large",
    "EgressDenied": "egress_denied",
    "WrongRegion": "wrong_region",
    "RunErased": "run_erased",
    "DigestMismatch": "digest_mismatch",
    "SizeMismatch": "size_mismatch",
    "ObjectNotUploaded": "object_not_uploaded",
    "RegionFenced": "region_fenced",
}


def all_domain_errors() -> list[type[DomainError]]:
    return [value for value in vars(errors).values()
            if isinstance(value, type) and issubclass(value, DomainError)
            and value is not DomainError]


def test_every_error_has_its_own_code() -> None:
    codes = [error.code for error in all_domain_errors()]
    assert len(codes) == len(set(codes))
    assert DomainError.code not in codes


@pytest.mark.parametrize(("name", "code"), sorted(SPEC_CODES.items()))
def test_the_codes_the_spec_promises_are_the_ones_raised(name: str, code: str) -> None:
    assert getattr(errors, name).code == code


def test_malformed_input_codes_start_with_invalid() -> None:
    for name in ("InvalidIdentifier", "InvalidDefinition", "ForbiddenContentClass",
                 "InvalidRecord", "InvalidCursor"):
        assert getattr(errors, name).code.startswith("invalid_")


def test_an_error_keeps_its_detail_and_extra_fields() -> None:
    error = errors.AckBeyondHead("too far", head=3)
    assert (error.detail, error.extra, str(error)) == ("too far", {"head": 3}, "too far")


def test_cursor_pruned_carries_what_a_reader_needs_to_resync() -> None:
    error = CursorPruned(requested=2, earliest=5, latest=9)
    assert (error.requested, error.earliest, error.latest) == (2, 5, 9)
    assert error.extra == {"requested": 2, "earliest": 5, "latest": 9, "reason": "resync"}


def test_backpressure_carries_a_retry_after() -> None:
    assert Backpressure("full").retry_after_seconds == 1
    assert Backpressure("full", retry_after_seconds=7).extra == {"retry_after_seconds": 7}
