"""Use cases: large objects through prepare → upload → commit (or abort)."""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator
from datetime import timedelta

from application.access import (
    stream_for_reading,
    stream_for_writing,
    stream_key,
)
from application.appending import Appender
from application.body_deletion import BodyDeleter
from application.node import NodeSettings
from application.ports.clock import Clock
from application.ports.errors import ObjectRegionUnavailable
from application.ports.objects import ObjectStore
from application.ports.streams import StreamSession, StreamStore
from domain.definition import StreamDefinition
from domain.errors import DomainError, NotFound, ObjectStateConflict
from domain.identifiers import StreamKey, object_intent_id
from domain.masking import ObjectBody, enforce
from domain.object_intent import (
    LIVE_STATES,
    AuthorizationReceipt,
    IntentState,
    ObjectIntent,
    ObjectPins,
)
from domain.pins import PlacementPins
from domain.principal import Principal
from domain.records import draft_for_object
from domain.residency import object_region_for


class Objects:
    """A record that references a body appears only after the object store confirmed
    the body's size and digest and the metadata commit agrees. Keys are server-owned;
    bodies go only to stores of the stream's pinned object regions."""

    def __init__(self, store: StreamStore, objects: ObjectStore, appender: Appender,
                 deleter: BodyDeleter, clock: Clock, node: NodeSettings) -> None:
        self._store = store
        self._objects = objects
        self._appender = appender
        self._deleter = deleter
        self._clock = clock
        self._node = node

    async def prepare(self, principal: Principal, run_id: str, stream_id: str,
                      pins: ObjectPins) -> tuple[ObjectIntent, bool]:
        """Same idempotency key → same intent (True when created now)."""
        key = stream_key(principal, run_id, stream_id)
        stream = await stream_for_writing(self._store, principal, key, self._node.region,
                                          self._clock.now())
        pins.validate()
        refuse_unmaskable(stream.definition, pins.content_type)
        region = self._region_for_bodies(stream.definition.placement)
        receipt = AuthorizationReceipt(principal.sub, tuple(sorted(principal.scopes)),
                                       principal.token_id)
        expires_at = self._clock.now() + timedelta(seconds=self._node.object_intent_ttl_seconds)
        async with self._store.lock(key) as session:
            session.stream.ensure_not_erased(session.run_erased)
            existing = await session.intent(str(object_intent_id(key, pins.idempotency_key)))
            if existing is not None:
                existing.ensure_owned_by(principal)
                existing.ensure_same_pins(pins)
                return existing, False
            intent = ObjectIntent.prepare(key, pins, receipt, expires_at, region)
            session.stream.reserve_object(intent.object_id, intent.size)
            session.save_intent(intent)
            return intent, True

    def _region_for_bodies(self, placement: PlacementPins) -> str:
        """The pinned region this node puts the stream's bodies in; refused at prepare,
        before any body moves, when it has a store for none of them (ADR 0058)."""
        region = object_region_for(placement, self._node.region, self._objects.serves)
        if region is None:
            raise ObjectRegionUnavailable(
                f"this node ({self._node.region}) has no object store for any of the "
                f"stream's object regions ({', '.join(placement.object_regions)}); "
                "prepare the object on a node that has one")
        return region

    async def upload(self, principal: Principal, run_id: str, stream_id: str, object_id: str,
                     body: AsyncIterable[bytes]) -> ObjectIntent:
        """Stream the body to the store, verify it, then record the evidence.

        The body is written outside the row lock; if the intent stopped being
        live meanwhile (aborted, expired, erased) the body is removed again.
        """
        key = stream_key(principal, run_id, stream_id)
        await stream_for_writing(self._store, principal, key, self._node.region,
                                 self._clock.now())
        intent = await self._intent(key, object_id)
        intent.ensure_owned_by(principal)  # before the body is read
        await self._refuse_if_expired(key, intent)
        intent.ensure_uploadable()
        evidence = await self._objects.put(intent.region, intent.object_key, body, intent.size,
                                           intent.sha256)
        try:
            async with self._store.lock(key) as session:
                locked = await self._locked_intent(session, object_id)
                locked.record_upload(evidence.size, evidence.sha256)
                session.save_intent(locked)
                return locked
        except DomainError:
            await self._objects.delete(intent.region, intent.object_key)
            raise

    async def commit(self, principal: Principal, run_id: str, stream_id: str,
                     object_id: str) -> tuple[int, bool]:
        """Append the referencing record once; returns (sequence, created now). Credit is
        decided as for any append, under the stream's pinned unread policy. Upload, commit
        and abort are for the preparing principal or an admin (the receipt is immutable,
        so checking it once, before anything changes, is enough)."""
        key = stream_key(principal, run_id, stream_id)
        stream = await stream_for_writing(self._store, principal, key, self._node.region,
                                          self._clock.now())
        (await self._intent(key, object_id)).ensure_owned_by(principal)
        return await self._appender.under_unread_policy(
            key, stream.definition.credit,
            lambda: self._commit_once(key, object_id, stream.definition))

    async def _commit_once(self, key: StreamKey, object_id: str,
                           definition: StreamDefinition) -> tuple[int, bool]:
        intent = await self._intent(key, object_id)
        earlier = intent.committed_sequence()
        if earlier is not None:
            return earlier, False
        refuse_unmaskable(definition, intent.content_type)  # an intent prepared before the rule
        await self._refuse_if_expired(key, intent)
        evidence = await self._objects.stat(intent.region, intent.object_key)
        if evidence is None or (evidence.size, evidence.sha256) != (intent.size, intent.sha256):
            raise ObjectStateConflict("the object store does not confirm the uploaded body",
                                      state=intent.state)
        draft = draft_for_object(intent.reference)
        async with self._store.lock(key) as session:
            session.stream.ensure_not_erased(session.run_erased)
            locked = await self._locked_intent(session, object_id)
            earlier = locked.committed_sequence()
            if earlier is not None:
                return earlier, False
            result = await self._appender.append_in(session, [draft])
            locked.commit(result.sequences[0])
            session.save_intent(locked)
            return result.sequences[0], True

    async def abort(self, principal: Principal, run_id: str, stream_id: str,
                    object_id: str) -> ObjectIntent:
        key = stream_key(principal, run_id, stream_id)
        await stream_for_writing(self._store, principal, key, self._node.region,
                                 self._clock.now())
        async with self._store.lock(key) as session:
            intent = await self._locked_intent(session, object_id)
            intent.ensure_owned_by(principal)
            intent.abort()
            session.stream.release_object(object_id)
            session.save_intent(intent)
            held = self._queue_body_deletion(session, intent)
        if not held:
            # Right away for the caller, through the queued row (a hold being placed
            # waits for it). An upload may still be in flight; an absent body is fine.
            await self._deleter.delete_now([(intent.region, intent.object_key)])
        return intent

    async def get(self, principal: Principal, run_id: str, stream_id: str,
                  object_id: str) -> ObjectIntent:
        key = stream_key(principal, run_id, stream_id)
        await stream_for_reading(self._store, principal, key, self._node.region, content=False,
                                 now=self._clock.now())
        return await self._intent(key, object_id)

    async def body(self, principal: Principal, run_id: str, stream_id: str,
                   object_id: str) -> tuple[ObjectIntent, AsyncIterator[bytes]]:
        """Only committed bodies are served, and only where the pins allow egress."""
        key = stream_key(principal, run_id, stream_id)
        stream = await stream_for_reading(self._store, principal, key, self._node.region,
                                          content=True, now=self._clock.now())
        intent = await self._intent(key, object_id)
        if intent.current_state is not IntentState.COMMITTED:
            raise NotFound("object body not available")
        # A pruned record's body waits in the deletion outbox; it is gone for readers now.
        if intent.sequence is None or intent.sequence < stream.earliest:
            raise NotFound("object body not available")
        # Retention and erasure delete committed bodies; answer 404 before streaming starts.
        if await self._objects.stat(intent.region, intent.object_key) is None:
            raise NotFound("object body not available")
        return intent, self._objects.open(intent.region, intent.object_key)

    async def _refuse_if_expired(self, key: StreamKey, intent: ObjectIntent) -> None:
        """An intent past its deadline is expired on the spot (its own unit of work, so
        the expiry sticks) and the request is refused; its body goes with it."""
        if intent.current_state not in LIVE_STATES or self._clock.now() < intent.expires_at:
            return
        async with self._store.lock(key) as session:
            locked = await self._locked_intent(session, intent.object_id)
            held = session.stream.legal_hold
            if locked.expire(self._clock.now()):
                session.stream.release_object(locked.object_id)
                session.save_intent(locked)
                held = self._queue_body_deletion(session, locked)
        if not held:
            await self._deleter.delete_now([(intent.region, intent.object_key)])
        raise ObjectStateConflict("the object intent expired", state=IntentState.EXPIRED.value)

    def _queue_body_deletion(self, session: StreamSession, intent: ObjectIntent) -> bool:
        """Queue the intent's body in the deletion outbox with this unit of work; returns
        whether the stream is held (then only the deletion worker may delete, after the
        hold is released)."""
        session.queue_deletions([(intent.region, intent.object_key)], self._clock.now())
        return session.stream.legal_hold

    async def _intent(self, key: StreamKey, object_id: str) -> ObjectIntent:
        intent = await self._store.load_intent(key, object_id)
        if intent is None:
            raise NotFound("object not found")
        return intent

    @staticmethod
    async def _locked_intent(session: StreamSession, object_id: str) -> ObjectIntent:
        intent = await session.intent(object_id)
        if intent is None:
            raise NotFound("object not found")
        return intent


def refuse_unmaskable(definition: StreamDefinition, content_type: str) -> None:
    """An object body goes to the object store without passing through Runnel, so a masked
    stream refuses it (before the upload) unless it allows unmasked bodies."""
    enforce(ObjectBody(content_type), definition.redaction.mask,
            definition.redaction.allow_unmasked_bodies)
