"""The `ObjectIntent` aggregate: a large body on its way into a stream.

prepared → uploaded → committed, or aborted / expired. Prepare pins the scope,
idempotency key, digest, size, content type, the authorization receipt, the
expiry and a server-owned object key; nothing the client sends later can
change them. A record referencing the body is appended only at commit, once.

The receipt is enforced, not only kept: every later step on the intent (a repeated
prepare, upload, commit, abort) is for the principal it names, or an admin of the
tenant (`ensure_owned_by`); anyone else is refused before the intent changes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any
from uuid import UUID

from eventsourcing.domain import Aggregate, event

from domain.errors import (
    DigestMismatch,
    InvalidRecord,
    NotIntentOwner,
    ObjectIntentConflict,
    ObjectNotUploaded,
    ObjectStateConflict,
    SizeMismatch,
    TooLarge,
)
from domain.identifiers import StreamKey, object_intent_id
from domain.media_type import validate_media_type
from domain.principal import Principal
from domain.records import IDEMPOTENCY_KEY_MAX, OBJECT_MAX_BYTES, ObjectRef
from domain.text import is_storable

SHA256_REGEX = "^[0-9a-f]{64}$"
_SHA256 = re.compile(SHA256_REGEX)


class IntentState(StrEnum):
    PREPARED = "prepared"
    UPLOADED = "uploaded"
    COMMITTED = "committed"
    ABORTED = "aborted"
    EXPIRED = "expired"


LIVE_STATES = frozenset({IntentState.PREPARED, IntentState.UPLOADED})
WITH_BODY = frozenset({IntentState.UPLOADED, IntentState.COMMITTED})


def parse_object_key(object_key: str) -> tuple[StreamKey, str] | None:
    """The stream and object id a server-owned key names (`tenant/run/stream/object-id`,
    as `ObjectIntent.prepare` derives it); None for a key of any other shape."""
    parts = object_key.split("/")
    if len(parts) != 4 or not all(parts):
        return None
    tenant, run_id, stream_id, object_id = parts
    return StreamKey(tenant, run_id, stream_id), object_id


@dataclass(frozen=True)
class ObjectPins:
    """What the producer declares at prepare time."""

    idempotency_key: str
    sha256: str
    size: int
    content_type: str
    schema: str | None = None

    def validate(self) -> ObjectPins:
        for name in ("idempotency_key", "content_type", "schema"):
            value = getattr(self, name)
            if value is not None and not is_storable(value):
                raise InvalidRecord(f"{name} may not contain U+0000 or lone surrogates",
                                    field=name)
        if not 0 < len(self.idempotency_key) <= IDEMPOTENCY_KEY_MAX:
            raise InvalidRecord(f"idempotency_key must be 1-{IDEMPOTENCY_KEY_MAX} chars")
        if _SHA256.fullmatch(self.sha256) is None:
            raise InvalidRecord("sha256 must be 64 lowercase hex characters")
        if self.size < 0:
            raise InvalidRecord("size must be non-negative")
        if self.size > OBJECT_MAX_BYTES:
            raise TooLarge(f"object body exceeds {OBJECT_MAX_BYTES} bytes", limit=OBJECT_MAX_BYTES)
        validate_media_type(self.content_type)
        return self


@dataclass(frozen=True)
class AuthorizationReceipt:
    """Who prepared the intent, with which scopes and token: kept as evidence."""

    principal: str
    scopes: tuple[str, ...]
    token_id: str | None


class ObjectIntent(Aggregate):
    """One large body's way from prepare to commit."""

    @staticmethod
    def create_id(tenant: str, run_id: str, stream_id: str, idempotency_key: str,
                  **_: Any) -> UUID:
        return object_intent_id(StreamKey(tenant, run_id, stream_id), idempotency_key)

    @event("Prepared")
    def __init__(self, tenant: str, run_id: str, stream_id: str, idempotency_key: str,
                 sha256: str, size: int, content_type: str, schema: str | None,
                 principal: str, scopes: list[str], token_id: str | None,
                 expires_at: datetime, object_key: str, region: str) -> None:
        self.tenant = tenant
        self.run_id = run_id
        self.stream_id = stream_id
        self.idempotency_key = idempotency_key
        self.sha256 = sha256
        self.size = size
        self.content_type = content_type
        self.schema = schema
        self.principal = principal
        self.scopes = scopes
        self.token_id = token_id
        self.expires_at = expires_at
        self.object_key = object_key
        self.region = region
        self.state = IntentState.PREPARED.value
        self.sequence: int | None = None

    @classmethod
    def prepare(cls, stream: StreamKey, pins: ObjectPins, receipt: AuthorizationReceipt,
                expires_at: datetime, region: str) -> ObjectIntent:
        """Pin everything; the object key is derived by the server, never chosen by a client."""
        pins.validate()
        intent_id = object_intent_id(stream, pins.idempotency_key)
        object_key = f"{stream.tenant}/{stream.run_id}/{stream.stream_id}/{intent_id}"
        return cls(tenant=stream.tenant, run_id=stream.run_id, stream_id=stream.stream_id,
                   idempotency_key=pins.idempotency_key, sha256=pins.sha256, size=pins.size,
                   content_type=pins.content_type, schema=pins.schema,
                   principal=receipt.principal, scopes=list(receipt.scopes),
                   token_id=receipt.token_id, expires_at=expires_at, object_key=object_key,
                   region=region)

    @property
    def object_id(self) -> str:
        return str(self.id)

    @property
    def stream_key(self) -> StreamKey:
        return StreamKey(self.tenant, self.run_id, self.stream_id)

    @property
    def current_state(self) -> IntentState:
        return IntentState(self.state)

    @property
    def reference(self) -> ObjectRef:
        return ObjectRef(self.object_id, self.size, self.sha256, self.content_type)

    def ensure_owned_by(self, principal: Principal) -> None:
        """The authorization receipt decides who may act on the intent after prepare: the
        principal that prepared it (its tenant is in the key already), or an admin."""
        if principal.sub != self.principal and not principal.is_admin:
            raise NotIntentOwner("only the principal that prepared this object, or an "
                                 "admin, may upload, commit or abort it")

    def ensure_same_pins(self, pins: ObjectPins) -> None:
        """A repeated prepare with the same key must declare the same body."""
        mine = (self.sha256, self.size, self.content_type, self.schema)
        theirs = (pins.sha256, pins.size, pins.content_type, pins.schema)
        if mine != theirs:
            raise ObjectIntentConflict("idempotency key already names a different object")

    def ensure_uploadable(self) -> None:
        if self.current_state not in LIVE_STATES:
            raise ObjectStateConflict(f"object is {self.state}", state=self.state)

    def record_upload(self, size: int, sha256: str) -> None:
        """Accept upload evidence only if it matches the pins exactly."""
        self.ensure_uploadable()
        if size != self.size:
            raise SizeMismatch(f"body has {size} bytes, {self.size} were declared",
                               expected=self.size, actual=size)
        if sha256 != self.sha256:
            raise DigestMismatch("body digest does not match the declared sha256",
                                 expected=self.sha256, actual=sha256)
        if self.current_state is IntentState.PREPARED:
            self._uploaded()

    @event("Uploaded")
    def _uploaded(self) -> None:
        self.state = IntentState.UPLOADED.value

    def committed_sequence(self) -> int | None:
        """The sequence of an earlier commit (a duplicate commit returns it), else None.

        Raises when the intent cannot be committed at all.
        """
        state = self.current_state
        if state is IntentState.COMMITTED:
            return self.sequence
        if state is IntentState.PREPARED:
            raise ObjectNotUploaded("the body has not been uploaded")
        if state is not IntentState.UPLOADED:
            raise ObjectStateConflict(f"object is {self.state}", state=self.state)
        return None

    def commit(self, sequence: int) -> None:
        if self.committed_sequence() is not None:
            return
        self._committed(sequence=sequence)

    @event("Committed")
    def _committed(self, sequence: int) -> None:
        self.state = IntentState.COMMITTED.value
        self.sequence = sequence

    def abort(self) -> None:
        """Abort a live intent; aborting twice is fine, aborting a committed one is not."""
        state = self.current_state
        if state is IntentState.ABORTED:
            return
        if state not in LIVE_STATES:
            raise ObjectStateConflict(f"object is {self.state}", state=self.state)
        self._aborted()

    @event("Aborted")
    def _aborted(self) -> None:
        self.state = IntentState.ABORTED.value

    def expire(self, now: datetime) -> bool:
        """Expire a live intent past its deadline; True when it did."""
        if self.current_state not in LIVE_STATES or now < self.expires_at:
            return False
        self._expired()
        return True

    @event("Expired")
    def _expired(self) -> None:
        self.state = IntentState.EXPIRED.value
