"""What a follower does with each SSE frame, shared by the sync and async clients.

The follower keeps the cursor: a reconnect resumes with `Last-Event-ID` set to
the last sequence it yielded, and anything at or below it is dropped, so a
caller sees every record exactly once, in order. The server ends a subscription
when its token expires (`event: end`, reason `token_expired`, ADR 0023): with a
token provider the follower asks it for a fresh token and resumes at once. A
node that stops ends its subscriptions with reason `shutdown` (ADR 0029): the
follower reconnects after a jittered backoff, at whichever node answers. A token
revoked under an open subscription (reason `token_revoked`, ADR 0060) raises
`Unauthenticated`: no fresh token from the same source would be accepted.
With a `consumer` it starts from that consumer's acknowledged sequence and acks
as it goes (`Acker`); `start="tail"` starts at the head, skipping the history.
With `live=True` it also applies the two-layer rules of `runnel_client.layers` (ADR
0019): no live chunk of a step whose record arrived, none of an attempt older
than the newest seen for its step.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx

from runnel_client.errors import ResyncRequired, RunnelError, TokenExpired, Unauthenticated
from runnel_client.layers import Steps
from runnel_client.wire import LiveEvent, Record, problem_of


class StreamEnded(Exception):
    """The stream was closed and every record was delivered."""


class Unavailable(Exception):
    """A 5xx answer to a subscription (a server starting or stopping): reconnect."""


class Refused(Exception):
    """The server refused to open a subscription for good: raise `error` to the caller
    (an expired token among them: then at the cursor)."""

    def __init__(self, error: RunnelError, cursor: int) -> None:
        super().__init__(str(error))
        if isinstance(error, TokenExpired):
            error.last_sequence = cursor
        self.error = error


ResyncHandler = Callable[[ResyncRequired], int]


@dataclass
class FollowState:
    cursor: int
    reconnects: int = 0
    duplicates: int = 0
    gaps: int = 0
    last_event_at: float = 0.0
    token_refreshes: int = 0
    acks: int = 0
    """Acks sent for the follow's consumer."""
    ack_failures: int = 0
    """Acks lost to a transport error or a 5xx (the next ack covers them)."""
    """Fresh tokens taken from the token provider after the server ended the
    subscription at its token's expiry (or refused the token with 401)."""
    extra: dict[str, Any] = field(default_factory=dict)
    steps: Steps = field(default_factory=Steps)

    @property
    def live_dropped(self) -> int:
        """Live chunks dropped by the two-layer rules (a settled step, an older attempt)."""
        return self.steps.dropped

    def headers(self, token: str | None = None) -> dict[str, str]:
        headers = {"Last-Event-ID": str(self.cursor), "Accept": "text/event-stream"}
        if token is not None:
            headers["Authorization"] = f"Bearer {token}"
        return headers

    def accept(self, event: str, data: str) -> Record | LiveEvent | None:
        """Turn one frame into what the caller sees (None: nothing to show)."""
        if event == "record":
            record = Record.from_wire(json.loads(data))
            if record.sequence <= self.cursor:
                self.duplicates += 1
                return None
            if record.sequence != self.cursor + 1:
                self.gaps += 1
            self.cursor = record.sequence
            self.steps.settle(record)
            return record
        if event == "live":
            return self.steps.admit(json.loads(data))
        if event == "end":
            end = json.loads(data) if data else {}
            reason = end.get("reason") if isinstance(end, dict) else None
            if reason == "token_expired":
                raise TokenExpired(self.cursor)
            if reason == "shutdown":
                raise Unavailable("the node is shutting down")
            if reason == "token_revoked":  # a fresh token from the same source is refused
                raise Refused(Unauthenticated(401, "unauthenticated", {
                    **end, "detail": "the subscription's token was revoked"}), self.cursor)
            raise StreamEnded
        if event == "resync":
            problem = json.loads(data)
            raise ResyncRequired(410, str(problem.get("code", "cursor_pruned")), problem)
        return None


def refusal(response: httpx.Response, cursor: int, *, expired: bool) -> None:
    """Raise what a subscription's answer other than 200 means: `Unavailable` for a 5xx
    (reconnect), `ResyncRequired` (410), `TokenExpired` for a 401 when `expired` (a
    renewable token that was not fresh: renew it), else `Refused` (raise it to the caller)."""
    if response.status_code == 200:
        return
    if response.status_code >= 500:
        raise Unavailable
    error = problem_of(response)
    if error.status == 401 and expired:
        raise TokenExpired(cursor) from error
    if isinstance(error, ResyncRequired):
        raise error
    raise Refused(error, cursor)


def start_cursor(status: dict[str, Any], after: int, consumer: str | None,
                 start: str | None) -> int:
    """Where a follow starts, from the stream's status: the head with `start="tail"`,
    else the consumer's acked sequence (or `after` if higher), else `after`."""
    if start == "tail":
        return max(after, int(status.get("head", 0)))
    if consumer is None:
        return after
    acks = status.get("consumers") or {}
    if consumer not in acks:
        raise RunnelError(404, "consumer_not_found", {
            "code": "consumer_not_found",
            "detail": f"consumer {consumer!r} is not declared in the stream's definition"})
    return max(after, int(acks[consumer]))


class Acker:
    """When a follow acks its consumer. A record counts as done once the caller asks
    for the next item (it finished with the one before), so a crash repeats at most
    `every` records and loses none; the last done record is acked when the stream
    ends. A caller that stops early acks nothing past the record before its last."""

    def __init__(self, every: int, acked: int) -> None:
        if every < 1:
            raise ValueError("ack_every must be ≥ 1")
        self.every = every
        self.acked = acked
        self.done = acked

    def passed(self, sequence: int) -> int | None:
        """The caller is done with `sequence`: the sequence to ack now, if any."""
        self.done = max(self.done, sequence)
        return self.done if self.done - self.acked >= self.every else None

    def final(self) -> int | None:
        return self.done if self.done > self.acked else None

    def acked_up_to(self, sequence: int, state: FollowState) -> None:
        self.acked = sequence
        state.acks += 1

    def failed(self, sequence: int, error: Exception, state: FollowState) -> None:
        """An ack of `sequence` went wrong: fine when another follower of the consumer
        acked further (`ack_regression`); counted when lost to the network or a 5xx (the
        next ack covers it); raised otherwise (403 `consumer_scope`, …)."""
        if isinstance(error, RunnelError) and error.code == "ack_regression":
            self.acked = sequence
        elif isinstance(error, httpx.TransportError) or (
                isinstance(error, RunnelError) and error.status >= 500):
            state.ack_failures += 1
        else:
            raise error


def backoff(attempt: int, draw: Callable[[float, float], float] = random.uniform) -> float:
    """Seconds before reconnect `attempt`: exponential up to 5 s, jittered over its upper
    half, so readers cut at once (a node stopping) do not come back at once."""
    ceiling = min(5.0, 0.1 * 2 ** min(attempt, 6))
    return draw(ceiling / 2, ceiling)
