"""The sans-IO core's vocabulary: what a plan asks its driver to do.

Every operation of the SDK (an append with its backpressure retries, an upload's
three calls, a follow with its resume rules) is written once, as a plan: a generator
that yields effects and is sent back what each one gave. It does no I/O itself. The
sync driver (`runnel_client.drive_sync`) and the async one
(`runnel_client.drive_async`) only perform effects: send a request, sleep, ask a
token source, open a streamed response and read its next frame or chunk. A
transport error (`httpx.TransportError`) of an effect is thrown into the plan at
its `yield`, so a plan decides itself which ones it survives; any other exception
of a driver ends the plan (its `finally` blocks run).
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, TypeVar, cast

import httpx

if TYPE_CHECKING:
    from runnel_client.auth import BearerToken
    from runnel_client.objects import MeasuredBody, ObjectBody

T = TypeVar("T")
"""What a plan returns."""


@dataclass(frozen=True)
class Send:
    """Send a request with the client's own auth; the answer is the `httpx.Response`.
    `upload`: stream this measured body as the request's content. `waits`: seconds the
    server may hold the answer on purpose (a long-polled read), added to the client's
    read timeout (`timeout_for`)."""

    method: str
    path: str
    params: dict[str, Any] | None = None
    json: Any = None
    upload: MeasuredBody | None = None
    headers: dict[str, str] | None = None
    waits: float = 0.0

    def timeout_for(self, http: httpx.Client | httpx.AsyncClient
                    ) -> httpx.Timeout | httpx._client.UseClientDefault:
        if not self.waits:
            return httpx.USE_CLIENT_DEFAULT
        usual = http.timeout
        read = None if usual.read is None else usual.read + self.waits
        return httpx.Timeout(connect=usual.connect, read=read, write=usual.write,
                             pool=usual.pool)


@dataclass(frozen=True)
class Sleep:
    seconds: float


@dataclass(frozen=True)
class FreshToken:
    """Ask a token source for a token (an async callable is awaited); the answer is it."""

    source: BearerToken


@dataclass(frozen=True)
class Measure:
    """Measure a body for an upload (blocking file I/O); the answer is a `MeasuredBody`."""

    body: ObjectBody


@dataclass(frozen=True)
class Open:
    """Open a streamed GET (closing any the plan had open); the answer is the
    `httpx.Response`, its body already read when its status is not 200. `sse`: read it
    as server-sent events. `auth` None is the client's own; `untimed`: no read timeout
    (a subscription waits for records as long as it takes), else the client's."""

    path: str
    sse: bool
    params: dict[str, Any] | None = None
    headers: dict[str, str] | None = None
    auth: httpx.Auth | None = None
    untimed: bool = False


@dataclass(frozen=True)
class Next:
    """The open response's next item: an SSE frame (`httpx_sse.ServerSentEvent`: its
    `event` and `data`) or a chunk of bytes; None when the response ended."""


@dataclass(frozen=True)
class Hangup:
    """Close the open response, if any."""


@dataclass(frozen=True)
class Emit:
    """Hand `item` to the caller of an iterating operation; the answer is None."""

    item: Any


NEXT, HANGUP = Next(), Hangup()
Effect = Send | Sleep | FreshToken | Measure | Open | Next | Hangup | Emit
Plan = Generator[Effect, Any, T]


class Stepper(Generic[T]):
    """Runs a plan up to its next effect. While `waiting`, the driver performs `effect`
    and calls `resume` with what it gave (or the transport error it raised); then the
    plan either emits (`emitted()`, then `resume(None)`) or is `done` (`outcome()`)."""

    def __init__(self, plan: Plan[T]) -> None:
        self._plan = plan
        self.done = False
        self.waiting = False
        """Whether the plan waits on an effect the driver performs (not done, not an `Emit`)."""
        self.result: T | None = None
        self.effect: Effect = HANGUP
        self._advance(plan.send, None)

    def resume(self, answer: Any) -> None:
        if isinstance(answer, httpx.TransportError):
            self._advance(self._plan.throw, answer)
        else:
            self._advance(self._plan.send, answer)

    def emitted(self) -> Any:
        """The item the plan emits (it goes on when resumed, the caller done with it)."""
        assert isinstance(self.effect, Emit)
        return self.effect.item

    def outcome(self) -> T:
        """The return value of a plan that is done (a call's plan never emits)."""
        if not self.done:
            raise AssertionError(f"a call's plan emitted {self.effect!r}")
        return cast(T, self.result)

    def close(self) -> None:
        self._plan.close()

    def _advance(self, step: Any, value: Any) -> None:
        try:
            self.effect = step(value)
        except StopIteration as stop:
            self.done, self.waiting, self.result = True, False, stop.value
        else:
            self.waiting = not isinstance(self.effect, Emit)
