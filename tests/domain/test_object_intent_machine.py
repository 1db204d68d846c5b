"""`ObjectIntent` against a plain model of its state machine, over random command sequences.

prepared → uploaded → committed, or aborted / expired. After every step the
aggregate agrees with the model, its pins are exactly those of prepare, a
final state is never left, and it is rebuilt exactly from its own events. A
refused command leaves every attribute as it was. Whoever asks, only the principal
of the authorization receipt or an admin is let through to a command.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from domain.errors import (
    DigestMismatch,
    DomainError,
    NotIntentOwner,
    ObjectIntentConflict,
    ObjectNotUploaded,
    ObjectStateConflict,
    SizeMismatch,
)
from domain.object_intent import IntentState, ObjectIntent
from domain.principal import Principal
from tests.domain.factories import SHA_A, SHA_B, T0, intent, pins, refused_unchanged, replayed

PREPARED, UPLOADED, COMMITTED = IntentState.PREPARED, IntentState.UPLOADED, IntentState.COMMITTED
ABORTED, EXPIRED = IntentState.ABORTED, IntentState.EXPIRED
LIVE = {PREPARED, UPLOADED}
FINAL = {COMMITTED, ABORTED, EXPIRED}
PIN_ATTRIBUTES = ("id", "tenant", "run_id", "stream_id", "idempotency_key", "sha256", "size",
                  "content_type", "schema", "principal", "scopes", "token_id", "expires_at",
                  "object_key", "region")


class ObjectIntentMachine(RuleBasedStateMachine):
    intent: ObjectIntent

    @initialize(size=st.integers(0, 1000), sha256=st.sampled_from([SHA_A, SHA_B]),
                content_type=st.sampled_from(["application/pdf", "text/csv"]),
                schema=st.none() | st.just("invoice/v1"), ttl=st.integers(0, 100))
    def prepare(self, size: int, sha256: str, content_type: str, schema: str | None,
                ttl: int) -> None:
        self.declared = pins(size=size, sha256=sha256, content_type=content_type, schema=schema)
        self.expires_at = T0 + timedelta(seconds=ttl)
        self.intent = intent(self.declared, expires_at=self.expires_at)
        self.pinned = self.pin_values()
        self.events: list[Any] = []
        self.state = PREPARED
        self.sequence: int | None = None
        self.final_seen: IntentState | None = None

    def pin_values(self) -> dict[str, Any]:
        return {name: getattr(self.intent, name) for name in PIN_ATTRIBUTES}

    def refuse(self, error: type[DomainError]) -> Any:
        return refused_unchanged(self.intent, error)

    @rule(size_matches=st.booleans(), digest_matches=st.booleans())
    def upload(self, size_matches: bool, digest_matches: bool) -> None:
        size = self.declared.size if size_matches else self.declared.size + 1
        digest = self.declared.sha256 if digest_matches else (
            SHA_B if self.declared.sha256 == SHA_A else SHA_A)
        error: type[DomainError] | None = None
        if self.state not in LIVE:
            error = ObjectStateConflict
        elif not size_matches:
            error = SizeMismatch
        elif not digest_matches:
            error = DigestMismatch
        if error is not None:
            with self.refuse(error):
                self.intent.record_upload(size, digest)
            return
        self.intent.record_upload(size, digest)
        self.state = UPLOADED

    @rule(sequence=st.integers(1, 50))
    def commit(self, sequence: int) -> None:
        if self.state is PREPARED:
            with self.refuse(ObjectNotUploaded):
                self.intent.commit(sequence)
            return
        if self.state in {ABORTED, EXPIRED}:
            with self.refuse(ObjectStateConflict):
                self.intent.commit(sequence)
            return
        self.intent.commit(sequence)
        if self.state is UPLOADED:
            self.state, self.sequence = COMMITTED, sequence
        assert self.intent.committed_sequence() == self.sequence

    @rule()
    def abort(self) -> None:
        if self.state in {COMMITTED, EXPIRED}:
            with self.refuse(ObjectStateConflict):
                self.intent.abort()
            return
        self.intent.abort()
        self.state = ABORTED

    @rule(from_deadline=st.integers(-2, 2) | st.integers(-200, 200))
    def expire(self, from_deadline: int) -> None:
        # Mostly near the deadline, where an off-by-one would hide.
        now = self.expires_at + timedelta(microseconds=from_deadline)
        due = self.state in LIVE and now >= self.expires_at
        assert self.intent.expire(now) is due
        if due:
            self.state = EXPIRED

    @rule(same=st.booleans(), changed=st.sampled_from(["size", "sha256", "content_type",
                                                       "schema"]))
    def prepare_again(self, same: bool, changed: str) -> None:
        again = pins(size=self.declared.size, sha256=self.declared.sha256,
                     content_type=self.declared.content_type, schema=self.declared.schema)
        if same:
            self.intent.ensure_same_pins(again)
            return
        different = {"size": self.declared.size + 1,
                     "sha256": SHA_B if self.declared.sha256 == SHA_A else SHA_A,
                     "content_type": "other/type",
                     "schema": None if self.declared.schema else "other"}[changed]
        declared: dict[str, Any] = {"size": again.size, "sha256": again.sha256,
                                    "content_type": again.content_type, "schema": again.schema}
        with self.refuse(ObjectIntentConflict):
            self.intent.ensure_same_pins(pins(**(declared | {changed: different})))

    @rule(sub=st.sampled_from(["alice", "bob", "root"]),
          scopes=st.sampled_from([("streams:write",), ("streams:read", "streams:write"),
                                  ("streams:admin",)]),
          tenant=st.sampled_from(["t1", "t2"]))
    def someone_asks(self, sub: str, scopes: tuple[str, ...], tenant: str) -> None:
        """The receipt names alice; an admin of any scope set passes, anyone else is refused
        and changes nothing (the tenant is the key's business, never the receipt's)."""
        asking = Principal(sub, tenant, frozenset(scopes))
        if sub == self.intent.principal or "streams:admin" in scopes:
            self.intent.ensure_owned_by(asking)
            return
        with self.refuse(NotIntentOwner):
            self.intent.ensure_owned_by(asking)

    @invariant()
    def collect_events(self) -> None:
        self.events.extend(self.intent.collect_events())

    @invariant()
    def agrees_with_the_model(self) -> None:
        assert self.intent.current_state is self.state
        assert self.intent.sequence == self.sequence
        assert (self.sequence is not None) == (self.state is COMMITTED)

    @invariant()
    def a_final_state_is_never_left(self) -> None:
        if self.final_seen is not None:
            assert self.intent.current_state is self.final_seen
        if self.intent.current_state in FINAL:
            self.final_seen = self.intent.current_state

    @invariant()
    def pins_never_change(self) -> None:
        assert self.pin_values() == self.pinned

    @invariant()
    def rebuilt_from_its_events_equals_the_live_intent(self) -> None:
        assert vars(replayed(self.events)) == vars(self.intent)


ObjectIntentMachine.TestCase.settings = settings(max_examples=200, stateful_step_count=30,
                                                 deadline=None)
TestObjectIntentMachine = ObjectIntentMachine.TestCase
