"""A record as a producer submits it, before it has a sequence; and its size rules."""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import msgspec

from domain.canonical_json import compact_json
from domain.errors import InvalidRecord, TooLarge
from domain.masking import BytesBody, JsonBody, enforce
from domain.media_type import validate_media_type
from domain.payload_text import canonical_text
from domain.text import is_storable

INLINE_MAX_BYTES = 64 * 1024
INLINE_TOO_LARGE = (f"inline record exceeds {INLINE_MAX_BYTES} bytes: send a larger body as an "
                    "object (POST …/objects, PUT its upload_url, POST …/commit; the SDK's "
                    "upload_object does all three)")
OBJECT_MAX_BYTES = 32 * 1024 * 1024
IDEMPOTENCY_KEY_MAX = 200
BASE64_REGEX = "^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$"
"""Canonical padded base64: the rule for `data`, checked before decoding and published as
is. The decoder alone also takes excess padding (`AAAA==`), which no encoder writes."""
_BASE64 = re.compile(BASE64_REGEX)


@dataclass(frozen=True)
class ObjectRef:
    object_id: str
    size: int
    sha256: str
    content_type: str


class Draft(msgspec.Struct, frozen=True):
    """One record of an append batch: exactly one of `payload` (JSON), `data` (bytes), `object`.

    A frozen struct, not a frozen dataclass: one is made per record on the append path, and
    a frozen dataclass's `__init__` (one `object.__setattr__` a field) costs far more
    (figures: ADR 0049)."""

    content_type: str
    size: int
    payload: Any = None
    data: bytes | None = None
    object: ObjectRef | None = None
    idempotency_key: str | None = None
    has_payload: bool = False
    payload_json: str | None = None
    """The payload's canonical compact JSON, encoded once for sizing and reused to store it."""


class Submitted(msgspec.Struct, forbid_unknown_fields=True, frozen=True):
    """One record of an append as the wire carries it, decoded straight into these types
    (in C, with the whole body: ADR 0049). A body that does not fit them is checked field
    by field instead (`draft_from_wire` on plain values), for the precise refusal.

    Only the JSON decoder makes these, so a payload here is a JSON value by construction
    (no NaN, infinity, unpaired surrogate or non-JSON type): what lets its canonical text
    be computed in C (`payload_text`)."""

    payload: Any = msgspec.UNSET
    data: str | msgspec.UnsetType = msgspec.UNSET
    content_type: str | None = None
    idempotency_key: str | None = None


def drafts_from_wire(items: Sequence[Any], mask: tuple[str, ...],
                     allow_unmasked_bodies: bool = False, message_batch: bool = False
                     ) -> list[Draft]:
    """`draft_from_wire` of each item, in order (the first refusal stops the batch)."""
    redaction = _Redaction(mask, allow_unmasked_bodies, message_batch)
    return [_typed_payload_draft(item, redaction) if type(item) is Submitted
            else _wire_draft(item, redaction) for item in items]


def draft_from_wire(item: Any, mask: tuple[str, ...], allow_unmasked_bodies: bool = False,
                    message_batch: bool = False) -> Draft:
    """Validate one submitted record, mask or refuse its body (`masking.enforce`), and
    size it.

    `item` is a `Submitted` (already of the wire types) or any decoded JSON value, which
    is checked field by field, in the same order, with the same refusals. A JSON
    payload's size is its canonical text's (`payload_json`) after redaction; base64
    `data` is sized as decoded bytes, after redaction. Either over 64 KiB is refused.
    `message_batch`: a payload that is an array holds messages (the Durable Streams
    facade's JSON mode), each masked as a payload of its own.
    """
    return _wire_draft(item, _Redaction(mask, allow_unmasked_bodies, message_batch))


def _typed_payload_draft(item: Submitted, redaction: _Redaction) -> Draft:
    """`_wire_draft` of a typed record, the most common one (a payload, no content type)
    decided without the general checks, which it passes by construction."""
    payload = item.payload
    if payload is msgspec.UNSET or item.content_type is not None \
            or item.data is not msgspec.UNSET:
        return _wire_draft(item, redaction)
    key = item.idempotency_key
    if key is not None:
        _check_key(key)
    if redaction.mask:
        payload = redaction.payload(payload)
    encoded = canonical_text(payload, decoded_from_json=True)
    _check_inline(len(encoded))
    return Draft("application/json", len(encoded), payload, None, None, key, True,
                 encoded.decode())


def _wire_draft(item: Any, redaction: _Redaction) -> Draft:
    if isinstance(item, Submitted):
        data = None if isinstance(item.data, msgspec.UnsetType) else item.data
        _check_key(item.idempotency_key)
        _check_one_body(item.content_type, item.payload is not msgspec.UNSET, data is not None)
        return _draft(True, item.payload, data, item.content_type, item.idempotency_key, redaction)
    if not isinstance(item, dict):
        raise InvalidRecord("each record must be a JSON object")
    unknown = set(item) - {"payload", "data", "content_type", "idempotency_key"}
    if unknown:
        raise InvalidRecord(f"unknown record fields: {sorted(unknown)}")
    key = item.get("idempotency_key")
    if key is not None and not isinstance(key, str):
        _refuse_key()
    _check_key(key)
    content_type = item.get("content_type")
    _check_one_body(content_type, "payload" in item, "data" in item)
    if "payload" in item:
        return _draft(False, item["payload"], None, content_type, key, redaction)
    encoded = item["data"]
    if not isinstance(encoded, str):
        raise InvalidRecord("data must be a base64 string")
    return _draft(False, None, encoded, content_type, key, redaction)


def _check_key(key: str | None) -> None:
    if key is not None and (not 0 < len(key) <= IDEMPOTENCY_KEY_MAX or not is_storable(key)):
        _refuse_key()


def _refuse_key() -> None:
    raise InvalidRecord(f"idempotency_key must be a string of 1-{IDEMPOTENCY_KEY_MAX} chars",
                        field="idempotency_key")


def _check_one_body(content_type: Any, has_payload: bool, has_data: bool) -> None:
    if content_type is not None:
        validate_media_type(content_type)
    if has_payload == has_data:
        raise InvalidRecord("a record carries exactly one of payload or data")


class _Redaction(NamedTuple):
    mask: tuple[str, ...]
    allow_unmasked_bodies: bool
    message_batch: bool

    def payload(self, payload: Any) -> Any:
        if not self.mask:  # what `enforce` answers too, without a walk on the hot path
            return payload
        if self.message_batch and isinstance(payload, list):
            return [self.payload_of_one(message) for message in payload]
        return self.payload_of_one(payload)

    def payload_of_one(self, payload: Any) -> Any:
        return enforce(JsonBody(payload), self.mask, self.allow_unmasked_bodies).value


def _draft(from_json: bool, payload: Any, data: str | None, content_type: str | None,
           key: str | None, redaction: _Redaction) -> Draft:
    """`from_json`: the payload is a JSON decoder's value (`Submitted`); `data` is None
    exactly when the record carries a payload."""
    if data is None:
        payload = redaction.payload(payload)
        encoded = canonical_text(payload, decoded_from_json=from_json)
        _check_inline(len(encoded))
        return Draft(content_type or "application/json", len(encoded), payload=payload,
                     idempotency_key=key, has_payload=True, payload_json=encoded.decode())
    content_type = content_type or "application/octet-stream"
    decoded = decode_data(data)
    _check_inline(len(decoded))  # as sent: an oversize body is 413 before it is decoded
    body = enforce(BytesBody(decoded, content_type), redaction.mask,
                   redaction.allow_unmasked_bodies)
    _check_inline(len(body.data))  # and as kept: a mask may make it longer
    return Draft(content_type, len(body.data), data=body.data, idempotency_key=key)


def decode_data(data: str) -> bytes:
    """The bytes of a `data` string: canonical padded base64 of at most 64 KiB decoded
    (`TooLarge` beyond, without decoding; `InvalidRecord` if not base64)."""
    if len(data) > (INLINE_MAX_BYTES * 4) // 3 + 4:
        raise TooLarge(INLINE_TOO_LARGE, limit=INLINE_MAX_BYTES)
    if _BASE64.fullmatch(data) is None:
        raise InvalidRecord("data is not valid base64", field="data")
    try:
        return base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        raise InvalidRecord("data is not valid base64", field="data") from None


def draft_for_object(ref: ObjectRef) -> Draft:
    """An object record weighs what its reference weighs in the unread window (readers are
    handed the reference inline; the body is fetched apart). The stream's totals count the
    body too (`Stream.plan_append`). It carries no idempotency key: a commit's idempotency
    is its intent's state, which no client-chosen key can reach."""
    reference = {"object_id": ref.object_id, "size": ref.size, "sha256": ref.sha256,
                 "content_type": ref.content_type}
    return Draft(ref.content_type, len(compact_json(reference)), object=ref)


def _check_inline(size: int) -> None:
    if size > INLINE_MAX_BYTES:
        raise TooLarge(INLINE_TOO_LARGE, limit=INLINE_MAX_BYTES, size=size)
