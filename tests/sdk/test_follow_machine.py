"""The follow plan (`runnel_client.follow_plan`) against a plain model, over random
server behaviour: frames in, effects and items out, no I/O.

The plan is what both `follow()`s run, so this is the follow rule for the sync and
the async client at once. The server is hostile within what the wire allows: it
replays records the follower has seen, mixes in live and unknown frames, drops the
connection, fails to connect, answers 503 or 401, ends a subscription at its token's
expiry or its shutdown, prunes past the cursor (`resync`), and loses, refuses or
overtakes acks. The model is the rule written the simplest way: the caller sees each
record once, in order, with no gap but the one `on_resync` chose; every subscription
resumes at the last one it saw; a token expiry resumes at once with a fresh token,
anything else after a bounded backoff; acks go out every `ack_every` records the
caller finished, never ahead of it, and the stream's end acks the last one.
"""

from __future__ import annotations

from typing import Any

import httpx
from httpx_sse import ServerSentEvent
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule
from runnel_client import FollowState, LiveEvent, Record, ResyncRequired, TokenExpired
from runnel_client.auth import BearerToken
from runnel_client.effects import Emit, FreshToken, Hangup, Next, Open, Send, Sleep
from runnel_client.follow_plan import FollowOptions, follow

EXPIRED = {"code": "unauthenticated", "detail": "token expired"}


def frame(event: str, data: str) -> ServerSentEvent:
    return ServerSentEvent(event=event, data=data)


def record(sequence: int) -> ServerSentEvent:
    return frame("record", f'{{"sequence": {sequence}, "content_type": "application/json", '
                           f'"appended_at": "t", "payload": {sequence}}}')


FRAMES = [frame("live", '{"seq": 1, "data": "x"}'), frame("ping", ""),
          frame("live", '{"seq": 2, "data": "y", "source": "other"}')]

class FollowMachine(RuleBasedStateMachine):
    @initialize(after=st.integers(0, 3), acked=st.none() | st.integers(0, 4),
                renewable=st.booleans(), every=st.integers(1, 3), records=st.integers(0, 8),
                resyncs=st.booleans())
    def start(self, after: int, acked: int | None, renewable: bool, every: int,
              records: int, resyncs: bool) -> None:
        self.records = max(records, after, acked or 0)
        self.renewable, self.every = renewable, every
        self.consumer = "ui" if acked is not None else None
        self.state = FollowState(after)
        self.plan = follow(FollowOptions(
            "run", "s", after, live=True, state=self.state, consumer=self.consumer,
            ack_every=every, token_provider=(lambda: "asked by the driver") if renewable else None,
            on_resync=(lambda error: error.earliest - 1) if resyncs else None),
            BearerToken("static"))
        # The model.
        self.cursor = max(after, acked or 0)
        self.start_at = self.cursor
        self.seen: list[int] = []
        self.expected: list[int] = []  # what the caller must have seen, in order
        self.resyncs = resyncs
        self.live_seen = 0
        self.acked = self.cursor
        self.done = self.cursor  # the last record the caller finished with
        self.acks: list[int] = []
        self.acks_stored = 0
        self.duplicates = self.sleeps = self.refreshes = 0
        self.fresh = True  # the next subscription's token was just taken
        self.token_asked = False
        self.position: int | None = None  # the server's next sequence on an open connection
        self.finished, self.raised = False, None
        self.pending: Any = next(self.plan)
        if self.consumer is not None:
            assert isinstance(self.pending, Send) and self.pending.method == "GET"
            self._answer(httpx.Response(200, json={"status": {
                "head": self.records, "consumers": {"ui": acked}}}))
        self._settle()

    # -- driving the plan --------------------------------------------------

    def _answer(self, value: Any) -> None:
        try:
            if isinstance(value, Exception):
                self.pending = self.plan.throw(value)
            else:
                self.pending = self.plan.send(value)
        except StopIteration:
            self.finished, self.pending = True, None
        except (TokenExpired, ResyncRequired) as error:
            self.raised, self.pending = error, None

    def _settle(self) -> None:
        """Answer the effects the server has no say in, checking each against the model."""
        while not self.over and not isinstance(self.pending, Open | Next) and not self._ack:
            effect = self.pending
            if isinstance(effect, Sleep):
                assert 0.05 <= effect.seconds <= 5.0
                assert self.position is None, "a backoff with the connection open"
                self.sleeps += 1
                self.token_asked = False
            elif isinstance(effect, FreshToken):
                assert self.renewable
                assert self.position is None, "a token asked for with the connection open"
                self.token_asked = True
                self._answer(f"fresh-{self.refreshes}")
                continue
            elif isinstance(effect, Hangup):
                self.position = None
            elif isinstance(effect, Emit):
                self._saw(effect.item)
                self._answer(None)
                if isinstance(effect.item, Record) and self.consumer is not None:
                    due = self.done - self.acked >= self.every
                    assert self._ack == due, "an ack not sent every n records, or sent early"
                    assert not due or self.pending.json["sequence"] == self.done
                continue
            self._answer(None)

    def _saw(self, item: Any) -> None:
        if isinstance(item, LiveEvent):
            self.live_seen += 1
            return
        assert isinstance(item, Record)
        assert item.sequence == self.cursor + 1, (item.sequence, self.cursor)
        self.cursor = item.sequence
        self.seen.append(item.sequence)
        self.expected.append(item.sequence)
        # The caller is done with it when the plan goes on (the machine resumes at once).
        self.done = item.sequence

    @property
    def over(self) -> bool:
        return self.finished or self.raised is not None

    @property
    def _ack(self) -> bool:
        return isinstance(self.pending, Send) and self.pending.path.endswith("/ack")

    @property
    def _opening(self) -> bool:
        return not self.over and isinstance(self.pending, Open)

    @property
    def _reading(self) -> bool:
        return not self.over and isinstance(self.pending, Next) and self.position is not None

    # -- the server --------------------------------------------------------

    def subscription_opens(self, replay: int) -> None:
        effect: Open = self.pending
        assert effect.headers is not None
        assert effect.headers["Last-Event-ID"] == str(self.cursor)
        assert effect.untimed and effect.params == {"live": "true"}
        assert isinstance(effect.auth, BearerToken)
        assert effect.auth.sync_token() == (
            f"fresh-{self.refreshes}" if self.renewable else "static")
        self.position = max(1, self.cursor + 1 - replay)
        self.fresh = False
        self._answer(httpx.Response(200))
        self._settle()

    def subscription_fails(self, kind: str) -> None:
        self._answer(httpx.ConnectError("refused") if kind == "connect_error" else
                     httpx.Response(503, json={"code": "store_unavailable"}))
        self._expect_backoff()

    def subscription_refuses_the_token_as_expired(self) -> None:
        fresh = self.fresh
        self._answer(httpx.Response(401, json=EXPIRED))
        if self.renewable and not fresh:
            self._expect_refresh()
        else:  # a fresh token refused, or one that cannot be renewed: the caller's
            assert isinstance(self.raised, TokenExpired)
            assert self.raised.last_sequence == self.cursor

    def sends_a_record(self) -> None:
        assert self.position is not None
        if self.position <= self.cursor:
            self.duplicates += 1
        self._answer(record(self.position))
        self.position += 1
        self._settle()

    def sends_another_frame(self, other: ServerSentEvent) -> None:
        self._answer(other)
        self._settle()

    def connection_ends(self, how: str) -> None:
        self._answer(None if how == "dropped" else httpx.ReadError("cut") if how == "read_error"
                     else frame("end", '{"reason": "shutdown"}'))
        self._expect_backoff()

    def token_expires(self) -> None:
        self._answer(frame("end", '{"reason": "token_expired"}'))
        if self.renewable:
            self._expect_refresh()
        else:
            assert isinstance(self.raised, TokenExpired)
            assert self.raised.last_sequence == self.cursor

    def retention_prunes(self, pruned: int) -> None:
        """Retention removed records past the cursor (`event: resync`): with `on_resync`
        the follower goes on from the earliest kept, after a backoff, else it raises."""
        earliest = min(self.cursor + pruned, self.records + 1)
        self._answer(frame("resync", f'{{"code": "cursor_pruned", "earliest": {earliest}}}'))
        if self.resyncs:
            self.cursor = earliest - 1
            self._expect_backoff()
        else:
            assert isinstance(self.raised, ResyncRequired)
            assert self.raised.earliest == earliest

    def stream_closes(self) -> None:
        self._answer(frame("end", '{"reason": "closed"}'))
        self._settle()
        while self._ack:  # the last ack, at the end
            self.ack_answered("ok")
        assert self.finished
        assert self.cursor == self.records
        if self.consumer is not None:
            assert self.acked == self.done, "the end did not ack the last record seen"

    def ack_answered(self, how: str) -> None:
        effect: Send = self.pending
        sequence = effect.json["sequence"]
        assert self.acked < sequence <= self.done, "an ack ahead of the caller, or backwards"
        failures = self.state.ack_failures
        self.acks.append(sequence)
        if how == "ok":
            self._answer(httpx.Response(200, json={"consumer_id": "ui", "acked": sequence}))
            self.acked = sequence
            self.acks_stored += 1
        elif how == "regression":
            self._answer(httpx.Response(409, json={"code": "ack_regression"}))
            self.acked = sequence
        else:
            self._answer(httpx.ReadError("lost") if how == "lost" else
                         httpx.Response(503, json={"code": "store_unavailable"}))
            assert self.state.ack_failures == failures + 1
        self._settle()

    @rule(data=st.data())
    def the_server_answers(self, data: st.DataObject) -> None:
        """Whatever the follower waits on, the server answers it one of the ways it may
        (nothing once the follow is over)."""
        if self.over:
            return
        if self._opening:
            how = data.draw(st.sampled_from(["opens", "opens", "connect_error", "unavailable",
                                             "expired"]))
            if how == "opens":
                self.subscription_opens(data.draw(st.integers(0, 2), label="replay"))
            elif how == "expired":
                self.subscription_refuses_the_token_as_expired()
            else:
                self.subscription_fails(how)
        elif self._reading:
            assert self.position is not None
            ways = ["frame", "dropped", "read_error", "shutdown", "token_expired", "pruned"]
            ways += ["record"] * 12 if self.position <= self.records else ["closed"] * 6
            how = data.draw(st.sampled_from(ways))
            if how == "record":
                self.sends_a_record()
            elif how == "closed":
                self.stream_closes()
            elif how == "token_expired":
                self.token_expires()
            elif how == "pruned":
                self.retention_prunes(data.draw(st.integers(2, 4), label="pruned"))
            elif how == "frame":
                self.sends_another_frame(data.draw(st.sampled_from(FRAMES)))
            else:
                self.connection_ends(how)
        else:
            assert self._ack, f"the follower waits on {self.pending!r}"
            self.ack_answered(data.draw(st.sampled_from(["ok", "ok", "lost", "unavailable",
                                                         "regression"])))

    def _expect_backoff(self) -> None:
        sleeps = self.sleeps
        self._settle()
        assert self.sleeps == sleeps + 1, "no backoff before reconnecting"

    def _expect_refresh(self) -> None:
        sleeps, self.token_asked = self.sleeps, False
        self.refreshes += 1
        self.fresh = True
        self._settle()
        assert self.sleeps == sleeps, "a token expiry resumes at once"
        assert self.token_asked, "no fresh token asked for"
        assert self._opening

    # -- what must always hold ---------------------------------------------

    @invariant()
    def the_cursor_is_the_last_record_seen(self) -> None:
        assert self.state.cursor == self.cursor
        assert self.seen == self.expected
        assert self.seen == sorted(set(self.seen))

    @invariant()
    def the_counters_agree(self) -> None:
        assert self.state.duplicates == self.duplicates
        assert self.state.gaps == 0  # the server is dense, and on_resync moved the cursor
        assert self.state.reconnects == self.sleeps
        assert self.state.token_refreshes == self.refreshes
        assert self.state.acks == self.acks_stored

    @invariant()
    def acks_only_with_a_consumer(self) -> None:
        if self.consumer is None:
            assert self.acks == []


FollowMachine.TestCase.settings = settings(max_examples=300, stateful_step_count=40,
                                           deadline=None)
TestFollowMachine = FollowMachine.TestCase
