"""Request bodies with a documented JSON shape (OpenAPI schemas come from these).

A body that does not have this shape (wrong types, unknown fields) is 400
`invalid_request`; a well-shaped body a rule refuses is 422 with the rule's
`invalid_…` code. The stream definition and the records inside an append are
validated by the domain, field by field, so they are only typed as objects here.
"""

from __future__ import annotations

from typing import Annotated, Any

import msgspec

from entrypoints.subscribe_tokens import DEFAULT_TTL_SECONDS, MAX_TTL_SECONDS

Sequence = Annotated[int, msgspec.Meta(ge=0, le=2**63 - 1)]


class AppendBody(msgspec.Struct, forbid_unknown_fields=True):
    """`records`: 1–1000 records, each `{"payload": <any JSON>}` or `{"data": "<base64>"}`,
    with optional `content_type` and `idempotency_key`."""

    records: list[dict[str, Any]]


class AckBody(msgspec.Struct, forbid_unknown_fields=True):
    sequence: Sequence


class LegalHoldBody(msgspec.Struct, forbid_unknown_fields=True):
    held: bool
    reason: str | None = None


class LiveBody(msgspec.Struct, forbid_unknown_fields=True):
    """`chunks`: 1–1000 JSON values, sent to the readers connected now and stored nowhere;
    optional `source` (1–128 chars), `attempt` (≥ 1) and `index` (of the first chunk;
    the rest count up from it, default 0). With a `source` and an explicit `index`, each
    chunk has a position: sending it again gets the same `seq` (ADR 0017)."""

    chunks: list[Any]
    source: str | None = None
    attempt: int | None = None
    index: Sequence | None = None


class PrepareObjectBody(msgspec.Struct, forbid_unknown_fields=True):
    """What the producer declares about a body before uploading it (SPEC §7): its
    `sha256` (64 lowercase hex), `size` in bytes (at most 32 MiB), `content_type`,
    optional `schema`; `idempotency_key` names the intent (same key → same intent)."""

    idempotency_key: str
    sha256: str
    size: Annotated[int, msgspec.Meta(ge=0, le=2**63 - 1)]
    content_type: str
    schema: str | None = None


class SubscribeTokenBody(msgspec.Struct, forbid_unknown_fields=True):
    """`ttl_seconds`: the token's lifetime, 1–300 (default 60); it never outlives the
    caller's own token."""

    ttl_seconds: Annotated[int, msgspec.Meta(ge=1, le=MAX_TTL_SECONDS)] = DEFAULT_TTL_SECONDS
