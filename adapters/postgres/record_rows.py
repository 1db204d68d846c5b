"""Records ⇄ rows of the `records` table.

A record carries exactly one body: a JSON `payload` (stored as `json` text, so
key order and number spelling survive), `data` bytes, or an object reference.
A payload of JSON `null` is the text `null`, distinct from SQL NULL (no payload).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from operator import attrgetter
from typing import Any

from application.ports.records import StoredRecord
from domain.errors import InvalidRecord
from domain.records import ObjectRef

PAYLOAD_SEPARATOR = "\x1e"
"""What joins the payload texts of a group's write (a control character JSON escapes)."""

RECORD_COLUMNS = ("sequence, content_type, appended_at, size, payload, data, object_id, "
                  "object_size, object_sha256, object_content_type, idempotency_key")


def check_storable(records: Sequence[StoredRecord]) -> None:
    """Refuse records Postgres would refuse, so that they fail their own unit of work, not
    the shared transaction they would have been written in: any text Postgres cannot hold
    (NUL characters, unpaired surrogates) in the text columns, and a payload text with
    the separator the group's write joins payloads with, which no JSON holds raw
    (`group_commit/record_columns.py`). The domain's canonical encoder refused NaN and
    unpaired surrogates, and JSON escapes NUL. Each distinct text is checked once.
    """
    for text in {*map(_CONTENT_TYPE, records), *filter(None, map(_KEY, records))}:
        _check_storable(text)
    if PAYLOAD_SEPARATOR in "".join(filter(None, map(_PAYLOAD, records))):
        raise InvalidRecord("a payload must be JSON text, which escapes control characters")


_CONTENT_TYPE = attrgetter("content_type")
_KEY = attrgetter("idempotency_key")
_PAYLOAD = attrgetter("payload_json")


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
