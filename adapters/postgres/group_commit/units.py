"""The two kinds of unit of work a group runs, how each runs on its stream, and how each
is answered.

- a `BodyUnit` is a `lock()`: its caller's `async with` body runs in the caller's task,
  on the session the group hands it, while the group waits for the body to end;
- a `WorkUnit` is a `transact()`: the group calls its `work` itself, optimistically
  first and, if that cannot stand, again under the row lock.

Rules:
- a unit is answered once: with its answer after its group committed, or with the
  error that stopped it (`fail`); whatever comes later is ignored;
- running a unit on its stream keeps what its session staged only when it ends
  cleanly (`accept`); otherwise the stream is put back as it was (`reject`);
- a unit may not open another unit while it runs (`NestedUnitOfWork`);
- its caller waits (for a session, for the commit) until the unit's deadline at most,
  then hears `StoreUnavailable` (`by_deadline`): a unit still queued is then dropped,
  one already in a group may still commit; its group's waits end by the latest
  deadline of its units (`group_deadline`), so its connection is free by then.
"""

from __future__ import annotations

import asyncio
import contextvars
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import asyncpg

from adapters.postgres.codec import AggregateCodec
from adapters.postgres.group_commit.failures import DATABASE_ERRORS
from adapters.postgres.group_commit.unit_of_work import (
    GroupStream,
    NeedsLock,
    PostgresSession,
    accept,
    reject,
)
from application.ports.errors import StoreUnavailable
from domain.identifiers import StreamKey

Work = Callable[[PostgresSession], Awaitable[Any]]


class StoreClosed(RuntimeError):
    """The store was closed while a unit of work waited for it."""


class NestedUnitOfWork(RuntimeError):
    """`lock()` inside another unit of work's body: it would wait for a committer that may
    be the one waiting for the outer body (a deadlock), so it is refused outright."""


@dataclass(eq=False)
class WorkUnit:
    """A `transact()`: the group calls `work` on a session of the stream."""

    key: StreamKey
    work: Work
    committed: asyncio.Future[Any]
    """The caller's answer: `result` once committed, or the error that stopped it."""
    result: Any = None
    """What `work` returned on its last run."""
    attempts: int = 0
    """Locked groups that failed before this unit ran (see `MAX_GROUP_ATTEMPTS`)."""
    deadline: float | None = None
    """Its request's store budget (`time.monotonic()`), or None."""

    @property
    def abandoned(self) -> bool:
        """Cancelled (or failed) before it ran."""
        return self.committed.done()

    @property
    def running(self) -> bool:
        return True  # only a running `work` sees itself in `_inside`

    def answer(self) -> None:
        _set(self.committed, self.result)

    def fail(self, error: BaseException) -> None:
        _fail(self.committed, error)

    async def run_and_stage(self, stream: GroupStream, connection: asyncpg.Connection,
                            codec: AggregateCodec, *, optimistic: bool
                            ) -> BaseException | None:
        """Run `work` on a session of `stream` and keep what it staged; what it raised
        (None: accepted). `NeedsLock` and database errors propagate: they concern the
        whole group."""
        session = PostgresSession(stream, connection, codec, optimistic=optimistic)
        inside = _inside.set(self)
        try:
            self.result = await self.work(session)
        except (NeedsLock, *DATABASE_ERRORS):
            reject(stream, session)
            raise
        except Exception as error:
            reject(stream, session)
            return error
        finally:
            _inside.reset(inside)
            session.detach()
        accept(stream, session)
        return None


@dataclass(eq=False)
class BodyUnit:
    """A `lock()`: the group hands its caller a session (`entered`) and waits until the
    caller's body ends (`finished`)."""

    key: StreamKey
    committed: asyncio.Future[None]
    """Set once the group committed (or with the error that stopped it)."""
    entered: asyncio.Future[PostgresSession]
    """The session handed to the caller's body."""
    finished: asyncio.Future[BaseException | None]
    """None on a clean exit of the body, else what the body raised."""
    attempts: int = 0
    """Locked groups that failed before this unit ran (see `MAX_GROUP_ATTEMPTS`)."""
    deadline: float | None = None
    """Its request's store budget (`time.monotonic()`), or None."""

    @property
    def abandoned(self) -> bool:
        """Cancelled (or failed) before it ran."""
        return self.committed.done() or self.entered.done()

    @property
    def running(self) -> bool:
        return self.entered.done() and not self.finished.done()

    def answer(self) -> None:
        _set(self.committed, None)

    def fail(self, error: BaseException) -> None:
        """A body not yet entered is refused at its `async with`; one that ran is answered
        when it awaits the commit; one whose caller gave up before entering (cancelled,
        or past its deadline) has nobody to answer."""
        if not self.entered.done():
            self.entered.set_exception(error)
        elif not self.entered.cancelled() and self.entered.exception() is None:
            _fail(self.committed, error)

    def leave(self, failure: BaseException | None) -> None:
        """The caller's body ended (None: cleanly), or was cancelled on its way in."""
        _set(self.finished, failure)

    async def run_and_stage(self, stream: GroupStream, connection: asyncpg.Connection,
                            codec: AggregateCodec) -> BaseException | None:
        """Hand the caller a session of `stream`, wait for its body, and keep what it
        staged; what the body raised (None: accepted)."""
        session = PostgresSession(stream, connection, codec)
        self.entered.set_result(session)
        failure = await self.finished
        session.detach()
        if failure is None:
            accept(stream, session)
        else:
            reject(stream, session)
        return failure


Unit = WorkUnit | BodyUnit

_inside: contextvars.ContextVar[Unit | None] = contextvars.ContextVar(
    "runnel_unit_of_work", default=None)


def refuse_nested(key: StreamKey) -> None:
    """Raise `NestedUnitOfWork` when called from inside a running unit of work."""
    outer = _inside.get()
    if outer is not None and outer.running:
        raise NestedUnitOfWork(f"a unit of work on {key.channel_key} inside the one on "
                               f"{outer.key.channel_key}")


def inside(unit: BodyUnit) -> contextvars.Token[Unit | None]:
    """Mark the caller's task as running `unit`'s body (undo with `outside`)."""
    return _inside.set(unit)


def outside(token: contextvars.Token[Unit | None]) -> None:
    _inside.reset(token)


def _set(future: asyncio.Future[Any], value: Any) -> None:
    if not future.done():
        future.set_result(value)


def _fail(future: asyncio.Future[Any], error: BaseException) -> None:
    if not future.done():
        future.set_exception(error)


def group_deadline(group: list[Unit]) -> float | None:
    """When the group's waits end: the latest of its units' deadlines (None if one has
    none)."""
    deadlines = [unit.deadline for unit in group]
    return None if None in deadlines else max(d for d in deadlines if d is not None)


async def by_deadline(future: asyncio.Future[Any], deadline: float | None) -> None:
    """Wait for `future` until `deadline`; past it, fail it (if not done) with
    `StoreUnavailable`. A caller cancelled meanwhile cancels `future` (its unit is
    abandoned, as when it awaits `future` itself)."""
    if deadline is None or future.done():
        return
    try:
        await asyncio.wait((future,), timeout=max(0.0, deadline - time.monotonic()))
    except asyncio.CancelledError:
        future.cancel()
        raise
    if not future.done():
        _fail(future, StoreUnavailable("the database did not answer within the request's "
                                       "budget"))
