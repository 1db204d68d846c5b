"""Records ⇄ rows of the `records` table.

A record carries exactly one body: a JSON `payload` (stored as `json` text, so
key order and number spelling survive), `data` bytes, or an object reference.
A payload of JSON `null` is the text `null`, distinct from SQL NULL (no payload).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from application.ports.records import StoredRecord
from domain.errors import InvalidRecord
from domain.records import ObjectRef

RECORD_COLUMNS = ("sequence, content_type, appended_at, size, payload, data, object_id, "
                  "object_size, object_sha256, object_content_type, idempotency_key")


def payload_text(record: StoredRecord) -> str | None:
    """The payload as stored, checked storable: a record Postgres would refuse must fail
    its own unit of work, not the shared transaction it would have been written in.

    Refused: NaN/Infinity (not JSON), and any text Postgres cannot hold (NUL
    characters, unpaired surrogates) in the payload or the text columns.
    """
    _check_storable(record.content_type)
    if record.idempotency_key is not None:
        _check_storable(record.idempotency_key)
    # Encoded by the domain's canonical encoder, which already refused NaN and unpaired
    # surrogates; JSON escapes NUL, so it is storable as it is.
    return record.payload_json


def storable(text: str) -> bool:
    """Whether Postgres can hold this text (no NUL, no unpaired surrogate)."""
    if "\x00" in text:
        return False
    if text.isascii():
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _check_storable(text: str) -> None:
    if not storable(text):
        raise InvalidRecord("text must be valid Unicode without NUL characters")


def record_from_row(row: Mapping[str, Any]) -> StoredRecord:
    object_id = row["object_id"]
    ref = None
    if object_id is not None:
        ref = ObjectRef(object_id, row["object_size"], row["object_sha256"],
                        row["object_content_type"])
    data = row["data"]
    return StoredRecord(
        sequence=row["sequence"],
        content_type=row["content_type"],
        appended_at=row["appended_at"],
        size=row["size"],
        payload_json=row["payload"],
        data=bytes(data) if data is not None else None,
        object=ref,
        idempotency_key=row["idempotency_key"],
    )
