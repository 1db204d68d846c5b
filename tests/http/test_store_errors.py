"""How database failures reach clients: the Postgres adapter turns each into an outage
of the store port, and the one error table gives each its answer. A full disk is
`StoreFull` (503 `insufficient_storage`: nothing was stored); refused, lost or hung
connections, and a failover in progress, are `StoreUnavailable` (503
`store_unavailable`: the outcome is unknown); anything else is no outage at all. An
open subscription the store fails just ends: its reader resumes from its cursor.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import asyncpg
import pytest

from adapters.postgres.pool import as_unavailable
from application.follow_frames import Frame, KeepaliveFrame
from application.ports.errors import StoreFull, StoreUnavailable
from domain.identifiers import StreamKey
from entrypoints.http.problems import classify, problem_body, problem_headers
from entrypoints.http.sse.subscription import encoded_frames

exceptions = asyncpg.exceptions


@pytest.mark.parametrize("error", [
    exceptions.DiskFullError("could not extend file: No space left on device"),
], ids=lambda error: type(error).__name__)
def test_a_full_disk_is_store_full(error: BaseException) -> None:
    full = as_unavailable(error)
    assert isinstance(full, StoreFull) and full.__cause__ is error


@pytest.mark.parametrize("error", [
    ConnectionRefusedError(111, "Connection refused"),
    TimeoutError(),
    exceptions.ConnectionDoesNotExistError("connection was closed in the middle of operation"),
    exceptions.AdminShutdownError("terminating connection due to administrator command"),
    exceptions.CannotConnectNowError("the database system is starting up"),
    exceptions.TooManyConnectionsError("sorry, too many clients already"),
    exceptions.OutOfMemoryError("out of memory"),
    exceptions.TargetServerAttributeNotMatched("None of the hosts match"),
    exceptions.ReadOnlySQLTransactionError("cannot execute INSERT in a read-only transaction"),
    asyncpg.InterfaceError("cannot call Transaction.__aexit__(): the underlying connection "
                           "is closed"),
    asyncpg.InterfaceError("connection is closed"),
    asyncpg.InternalClientError("cannot switch to state 15; another operation (2) is in "
                                "progress"),
], ids=lambda error: type(error).__name__)
def test_outages_are_store_unavailable_and_not_full(error: BaseException) -> None:
    unavailable = as_unavailable(error)
    assert isinstance(unavailable, StoreUnavailable) and not isinstance(unavailable, StoreFull)
    assert unavailable.__cause__ is error


@pytest.mark.parametrize("error", [
    exceptions.UniqueViolationError("duplicate key"),
    exceptions.CheckViolationError("check"),
    asyncpg.InterfaceError("cannot perform operation: another operation is in progress"),
    ValueError("not a database error"),
], ids=lambda error: type(error).__name__)
def test_other_errors_are_no_outage(error: BaseException) -> None:
    assert as_unavailable(error) is None


def test_store_full_answers_503_insufficient_storage_with_retry_after() -> None:
    full = StoreFull("the database is out of disk space: DiskFullError")
    assert classify(full) == (503, "insufficient_storage")
    body = problem_body(full)
    assert body["code"] == "insufficient_storage" and body["status"] == 503
    assert "nothing of this request was stored" in body["detail"]
    assert "DiskFullError" not in body["detail"]  # the log names the cause, not the client
    assert int(problem_headers(full, 503)["Retry-After"]) >= 1


def test_an_unknown_outcome_stays_store_unavailable() -> None:
    assert classify(StoreUnavailable("lost")) == (503, "store_unavailable")


class _FailingFollow:
    """A follow whose store fails after one frame, as when Postgres dies under a stream."""

    key = StreamKey("t", "r", "s")

    async def frames(self) -> AsyncIterator[Frame]:
        yield KeepaliveFrame()
        raise StoreUnavailable("the database is unavailable: ConnectionRefusedError")


async def test_a_subscription_the_store_fails_ends_without_an_error_and_is_released() -> None:
    released: list[bool] = []

    async def release() -> None:
        released.append(True)

    frames = [frame async for frame in encoded_frames(
        _FailingFollow(), release)]  # type: ignore[arg-type]
    assert frames == [b": ping\r\n\r\n"]
    assert released == [True]


async def test_any_other_failure_under_a_stream_still_propagates() -> None:
    class Broken(_FailingFollow):
        async def frames(self) -> AsyncIterator[Frame]:
            yield KeepaliveFrame()
            raise RuntimeError("a bug")

    async def release() -> None:
        return None

    with pytest.raises(RuntimeError):
        _ = [frame async for frame in encoded_frames(
            Broken(), release)]  # type: ignore[arg-type]
