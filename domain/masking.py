"""Mask or refuse: what a masked stream does with each representation of a body (ADR 0054).

Rules:

- **A stream masks when its `redaction.mask` is not empty**; an unmasked stream takes
  every body as it comes. `enforce` is the one decision, for every representation.
- **JSON is masked.** A record's `payload` and a live chunk are JSON values: every pinned
  pointer that resolves is replaced by the mask.
- **Bytes that say they are JSON are JSON.** `data` whose media type is
  `application/json` or ends in `+json` (any case, any parameters) is decoded as strict
  UTF-8 JSON, masked, and kept as the compact text of what was decoded, never as the bytes
  sent: a duplicate key the decoder dropped, or bytes around the value, may hold what the
  mask promises is never stored. Bytes that are not such JSON (or nest deeper than
  `MAX_JSON_DEPTH`) are refused (`invalid_record`), whatever the opt-in.
- **What cannot be masked is refused.** Bytes of any other media type, and object bodies
  (which go to the object store without passing through Runnel), are refused
  (`redaction_unenforceable`, naming the pin) unless the definition pins
  `redaction.allow_unmasked_bodies: true`; then they are kept as sent.
"""

from __future__ import annotations

from typing import Any, TypeVar

import msgspec

from domain.canonical_json import compact_json
from domain.errors import InvalidRecord, RedactionUnenforceable
from domain.media_type import is_json_media_type
from domain.redaction import redact

MAX_JSON_DEPTH = 64
"""Deepest nesting a record may have. Far below the interpreter's recursion limit, so a
stored record can always be encoded again for every reader, on any call stack."""
PIN = "redaction.mask"
OPT_IN = "redaction.allow_unmasked_bodies"


class JsonBody(msgspec.Struct, frozen=True):
    value: Any


class BytesBody(msgspec.Struct, frozen=True):
    data: bytes
    content_type: str


class ObjectBody(msgspec.Struct, frozen=True):
    content_type: str


Body = TypeVar("Body", JsonBody, BytesBody, ObjectBody)


def enforce(body: Body, mask: tuple[str, ...], allow_unmasked_bodies: bool) -> Body:
    """The body as it may be stored or sent (see the module rules), or a refusal."""
    if not mask:
        return body
    if isinstance(body, JsonBody):
        return JsonBody(redact(body.value, mask))  # type: ignore[return-value]
    if isinstance(body, BytesBody) and is_json_media_type(body.content_type):
        masked = redact(_decoded(body), mask)
        return BytesBody(compact_json(masked), body.content_type)  # type: ignore[return-value]
    if allow_unmasked_bodies:
        return body
    what = "an object body" if isinstance(body, ObjectBody) else "data"
    raise RedactionUnenforceable(
        f"the stream pins {PIN} and cannot mask {what} of content_type "
        f"{body.content_type!r}: send JSON (a payload, or data with a JSON content type), "
        f"or create the stream with {OPT_IN}: true", pin=PIN, opt_in=OPT_IN,
        content_type=body.content_type)


def _decoded(body: BytesBody) -> Any:
    try:
        value = msgspec.json.decode(body.data)
    except (msgspec.DecodeError, RecursionError):
        raise _not_json(body) from None
    if _too_deep(value):
        raise _not_json(body)
    return value


def _not_json(body: BytesBody) -> InvalidRecord:
    return InvalidRecord(
        f"data of content_type {body.content_type!r} is not UTF-8 JSON nested at most "
        f"{MAX_JSON_DEPTH} levels deep, so the stream's {PIN} cannot be applied to it",
        field="data", pin=PIN)


def _too_deep(value: Any) -> bool:
    """Iterative, so the check itself cannot hit the recursion limit."""
    pending = [(value, 1)]
    while pending:
        node, depth = pending.pop()
        if depth > MAX_JSON_DEPTH:
            return True
        if isinstance(node, dict):
            pending.extend((item, depth + 1) for item in node.values())
        elif isinstance(node, list):
            pending.extend((item, depth + 1) for item in node)
    return False
