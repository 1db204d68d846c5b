"""Every rule the domain refuses, as an exception with a stable machine code.

The HTTP layer maps each class to a status in one table; the `code` is what
clients match on, so it never changes once released.
"""

from __future__ import annotations

from typing import Any


class DomainError(Exception):
    """A command was refused; the aggregate did not change."""

    code = "domain_error"

    def __init__(self, detail: str, **extra: Any) -> None:
        super().__init__(detail)
        self.detail = detail
        self.extra = extra


class InvalidIdentifier(DomainError):
    code = "invalid_identifier"


class InvalidDefinition(DomainError):
    code = "invalid_definition"


class ForbiddenContentClass(DomainError):
    code = "invalid_content_class"


class InvalidRecord(DomainError):
    code = "invalid_record"


class InvalidCursor(DomainError):
    code = "invalid_cursor"


class FutureCursor(DomainError):
    code = "future_cursor"


class CursorTooLarge(DomainError):
    """A run follow's compound cursor names more streams, or holds more bytes, than the
    bounds of `domain/run_cursor.py`."""

    code = "cursor_too_large"


class TooManyStreamsToFollow(DomainError):
    """A run follow would cover more streams than one compound cursor can hold: narrow it
    with `?streams=` or `?content_class=`."""

    code = "too_many_streams_to_follow"


class InvalidLimit(DomainError):
    """A page size (`limit`) that is not an integer in the route's range."""

    code = "invalid_limit"


class CursorPruned(DomainError):
    """The record after the cursor was removed by retention; the reader must resync."""

    code = "cursor_pruned"

    def __init__(self, requested: int, earliest: int, latest: int) -> None:
        super().__init__(
            f"records after {requested} were pruned; earliest retained is {earliest}",
            requested=requested,
            earliest=earliest,
            latest=latest,
            reason="resync",
        )
        self.requested = requested
        self.earliest = earliest
        self.latest = latest


class NotFound(DomainError):
    code = "not_found"


class DefinitionConflict(DomainError):
    code = "definition_conflict"


class StreamClosed(DomainError):
    code = "stream_closed"


class QuotaExhausted(DomainError):
    code = "quota_exhausted"


class Backpressure(DomainError):
    """The unread ceiling is reached; retry after the slowest consumer acks."""

    code = "backpressure"

    def __init__(self, detail: str, retry_after_seconds: int = 1, **extra: Any) -> None:
        super().__init__(detail, retry_after_seconds=retry_after_seconds, **extra)
        self.retry_after_seconds = retry_after_seconds


class TooLarge(DomainError):
    code = "too_large"


class AckRegression(DomainError):
    code = "ack_regression"


class AckBeyondHead(DomainError):
    code = "ack_beyond_head"


class ConsumerScope(DomainError):
    code = "consumer_scope"


class ConsumerNotFound(DomainError):
    """Only consumers declared in the definition exist; an ack never registers one."""

    code = "consumer_not_found"


class Unauthenticated(DomainError):
    code = "unauthenticated"


class Forbidden(DomainError):
    code = "forbidden"


class WrongRegion(DomainError):
    code = "wrong_region"


class EgressDenied(DomainError):
    code = "egress_denied"


class RegionFenced(DomainError):
    """The node's region is fenced (failed over away from): it stores nothing (ADR 0016)."""

    code = "region_fenced"


class RunErased(DomainError):
    code = "run_erased"


class StreamHeld(DomainError):
    code = "legal_hold"


class DigestMismatch(DomainError):
    code = "digest_mismatch"


class SizeMismatch(DomainError):
    code = "size_mismatch"


class ObjectNotUploaded(DomainError):
    code = "object_not_uploaded"


class ObjectStateConflict(DomainError):
    """The intent is in a state that does not allow the command (aborted, expired, committed)."""

    code = "object_state_conflict"


class ObjectIntentConflict(DomainError):
    """The idempotency key was already used for an intent with different pins."""

    code = "object_intent_conflict"


class TooManySubscriptions(DomainError):
    code = "too_many_subscriptions"


class TooManyStreams(DomainError):
    """The run already holds as many streams as the server allows (`max_streams_per_run`)."""

    code = "too_many_streams"


class InvalidContentType(InvalidRecord):
    """A `content_type` that is not an RFC 9110 media type (it would end up in a header)."""

    code = "invalid_content_type"


class NotIntentOwner(Forbidden):
    """Only the principal that prepared an object intent, or an admin, may upload, commit
    or abort it (its authorization receipt)."""

    code = "not_intent_owner"


class NotAnInputStream(DomainError):
    """Only an input stream's records are delivered to the workflow: an output stream has no
    deliveries to re-drive."""

    code = "not_an_input_stream"


class RedactionUnenforceable(DomainError):
    """A body a masked stream cannot mask (bytes that are not JSON, an object body), on a
    stream that does not pin `redaction.allow_unmasked_bodies`."""

    code = "redaction_unenforceable"


class StreamDeleted(DomainError):
    """The stream id was used by a stream that was deleted: the id is never reused, so an
    old cursor never reads a new stream's records as its own (docs/adr/0075)."""

    code = "stream_deleted"


class InvalidWait(DomainError):
    """A long-poll `wait` that is not a number of seconds within the server's bound."""

    code = "invalid_wait"
