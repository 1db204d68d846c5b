"""A record as a producer submits it, before it has a sequence; and its size rules."""

from __future__ import annotations

import base64
import binascii
import re
from dataclasses import dataclass
from typing import Any

from domain.canonical_json import compact_json
from domain.errors import InvalidRecord, TooLarge
from domain.media_type import validate_media_type
from domain.redaction import redact
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


@dataclass(frozen=True)
class Draft:
    """One record of an append batch: exactly one of `payload` (JSON), `data` (bytes), `object`."""

    content_type: str
    size: int
    payload: Any = None
    data: bytes | None = None
    object: ObjectRef | None = None
    idempotency_key: str | None = None
    has_payload: bool = False
    payload_json: str | None = None
    """The payload's canonical compact JSON, encoded once for sizing and reused to store it."""


def draft_from_wire(item: Any, mask: tuple[str, ...]) -> Draft:
    """Validate one submitted record, apply redaction, and size it.

    A JSON payload's size is its compact UTF-8 encoding after redaction; base64
    `data` is sized as decoded bytes. Either over 64 KiB is refused.
    """
    if not isinstance(item, dict):
        raise InvalidRecord("each record must be a JSON object")
    unknown = set(item) - {"payload", "data", "content_type", "idempotency_key"}
    if unknown:
        raise InvalidRecord(f"unknown record fields: {sorted(unknown)}")
    key = item.get("idempotency_key")
    if key is not None and (not isinstance(key, str) or not 0 < len(key) <= IDEMPOTENCY_KEY_MAX
                            or not is_storable(key)):
        raise InvalidRecord(f"idempotency_key must be a string of 1-{IDEMPOTENCY_KEY_MAX} chars",
                            field="idempotency_key")
    content_type = item.get("content_type")
    if content_type is not None:
        validate_media_type(content_type)
    if ("payload" in item) == ("data" in item):
        raise InvalidRecord("a record carries exactly one of payload or data")
    if "payload" in item:
        payload = redact(item["payload"], mask)
        encoded = compact_json(payload)
        _check_inline(len(encoded))
        return Draft(content_type or "application/json", len(encoded), payload=payload,
                     idempotency_key=key, has_payload=True, payload_json=encoded.decode())
    encoded = item["data"]
    if not isinstance(encoded, str):
        raise InvalidRecord("data must be a base64 string")
    if len(encoded) > (INLINE_MAX_BYTES * 4) // 3 + 4:
        raise TooLarge(INLINE_TOO_LARGE, limit=INLINE_MAX_BYTES)
    if _BASE64.fullmatch(encoded) is None:
        raise InvalidRecord("data is not valid base64", field="data")
    try:
        data = base64.b64decode(encoded, validate=True)
    except (binascii.Error, ValueError):
        raise InvalidRecord("data is not valid base64", field="data") from None
    _check_inline(len(data))
    return Draft(content_type or "application/octet-stream", len(data), data=data,
                 idempotency_key=key)


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
