"""Request bodies with a documented JSON shape (OpenAPI schemas come from these).

A body that does not have this shape (wrong types, unknown fields) is 400
`invalid_request`; a well-shaped body a rule refuses is 422 with the rule's
`invalid_…` code. The stream definition and the records inside an append are
validated by the domain, field by field, so they are only typed as objects here; their
real rules are published (`Published`, ADR 0026) from the same constants and models.
"""

from __future__ import annotations

from typing import Annotated, Any, cast

import msgspec
from litestar import Request
from litestar.exceptions import SerializationException
from litestar.types import Empty

from application.lifecycle import HOLD_REASON_MAX_LENGTH
from application.live import SOURCE_MAX_LENGTH
from application.redrive import MAX_REDRIVE_SEQUENCES
from domain.cursor import MAX_SEQUENCE
from domain.media_type import MEDIA_TYPE_MAX_CHARS, MEDIA_TYPE_REGEX
from domain.object_intent import SHA256_REGEX
from domain.records import IDEMPOTENCY_KEY_MAX, OBJECT_MAX_BYTES, Submitted
from entrypoints.auth.subscribe_tokens import DEFAULT_TTL_SECONDS, MAX_TTL_SECONDS
from entrypoints.http.openapi import (
    Published,
    chunks_request_schema,
    records_request_schema,
)

Sequence = Annotated[int, msgspec.Meta(ge=0, le=MAX_SEQUENCE)]


def _text(max_length: int, **rule: Any) -> Published:
    return Published({"type": "string", "minLength": 1, "maxLength": max_length, **rule})


class AppendBody(msgspec.Struct, forbid_unknown_fields=True):
    """`records`: 1–1000 records, each `{"payload": <any JSON>}` or `{"data": "<base64>"}`,
    with optional `content_type` and `idempotency_key`.

    Parsed by `AppendRequest`: when the body fits `TypedAppend`, `records` holds
    `Submitted` records, not dicts (msgspec hands a struct through as it is)."""

    records: Annotated[list[dict[str, Any]], Published(records_request_schema())]


class TypedAppend(msgspec.Struct, forbid_unknown_fields=True):
    records: list[Submitted]


_typed_append = msgspec.json.Decoder(TypedAppend).decode


class AppendRequest(Request[Any, Any, Any]):
    """The append route's request: its JSON body decoded once, in C, into `Submitted`
    records (ADR 0049). A body that is JSON but not of those types is decoded as plain
    values instead, which Litestar checks against `AppendBody` (400 `invalid_request`)
    and the domain record by record (422 `invalid_record`, …), exactly as any body was
    before; one that is not JSON is 400 `invalid_request`, as before."""

    async def json(self) -> Any:
        if self._json is Empty:
            if (cached := self._connection_state.json) is not Empty:
                self._json = cached
            else:
                body = await self.body()
                try:
                    self._json = AppendBody(records=cast(Any, _typed_append(body).records))
                except msgspec.ValidationError:
                    self._json = await super().json()
                except msgspec.DecodeError as error:
                    raise SerializationException(str(error)) from error
                self._connection_state.json = self._json
        return self._json


class AckBody(msgspec.Struct, forbid_unknown_fields=True):
    sequence: Sequence


class LegalHoldBody(msgspec.Struct, forbid_unknown_fields=True):
    held: bool
    reason: Annotated[str, Published(
        {"type": "string", "maxLength": HOLD_REASON_MAX_LENGTH})] | None = None


class RedriveBody(msgspec.Struct, forbid_unknown_fields=True):
    """`sequences`: the dead letters to re-drive (1–1000 sequences); left out, the stream's
    lowest 1000 dead letters."""

    sequences: Annotated[
        list[Annotated[int, msgspec.Meta(ge=1, le=MAX_SEQUENCE)]],
        msgspec.Meta(min_length=1, max_length=MAX_REDRIVE_SEQUENCES),
        Published({"type": "array", "minItems": 1, "maxItems": MAX_REDRIVE_SEQUENCES,
                   "items": {"type": "integer", "minimum": 1, "maximum": MAX_SEQUENCE}}),
    ] | None = None


class LiveBody(msgspec.Struct, forbid_unknown_fields=True):
    """`chunks`: 1–1000 JSON values, sent to the readers connected now and stored nowhere;
    optional `source` (1–128 chars), `attempt` (≥ 1) and `index` (of the first chunk;
    the rest count up from it, default 0). With a `source` and an explicit `index`, each
    chunk has a position: sending it again gets the same `seq` (ADR 0017)."""

    chunks: Annotated[list[Any], Published(chunks_request_schema())]
    source: Annotated[str, _text(SOURCE_MAX_LENGTH)] | None = None
    attempt: Annotated[int, Published(
        {"type": "integer", "minimum": 1, "maximum": MAX_SEQUENCE})] | None = None
    index: Annotated[int, msgspec.Meta(ge=0, le=MAX_SEQUENCE), Published(
        {"type": "integer", "minimum": 0, "maximum": MAX_SEQUENCE})] | None = None


class PrepareObjectBody(msgspec.Struct, forbid_unknown_fields=True):
    """What the producer declares about a body before uploading it (docs/api.md): its
    `sha256` (64 lowercase hex), `size` in bytes (at most 32 MiB), `content_type`,
    optional `schema`; `idempotency_key` names the intent (same key → same intent)."""

    idempotency_key: Annotated[str, _text(IDEMPOTENCY_KEY_MAX)]
    sha256: Annotated[str, Published({"type": "string", "pattern": SHA256_REGEX})]
    size: Annotated[int, msgspec.Meta(ge=0, le=MAX_SEQUENCE), Published(
        {"type": "integer", "minimum": 0, "maximum": OBJECT_MAX_BYTES,
         "description": f"Above {OBJECT_MAX_BYTES} bytes: 413 `too_large`."})]
    content_type: Annotated[str, _text(MEDIA_TYPE_MAX_CHARS, pattern=MEDIA_TYPE_REGEX)]
    schema: str | None = None


class SubscribeTokenBody(msgspec.Struct, forbid_unknown_fields=True):
    """`ttl_seconds`: the token's lifetime, 1–300 (default 60); it never outlives the
    caller's own token."""

    ttl_seconds: Annotated[int, msgspec.Meta(ge=1, le=MAX_TTL_SECONDS)] = DEFAULT_TTL_SECONDS
