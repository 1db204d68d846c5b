"""The published shapes of successful responses (docs/api.md), for the OpenAPI document.

Each shape lists the fields a client may rely on (`required`) and leaves room for fields
added later (no `additionalProperties: false`). The schemathesis run in `make test`
checks every response of the live server against these (ADR 0026), so a shape that
drifts from its handler fails the build.
"""

from __future__ import annotations

from http import HTTPStatus
from typing import Annotated, Any

from litestar.openapi.datastructures import ResponseSpec

from entrypoints.http.openapi import ID_FIELDS, JsonSchema, Published, definition_schema

INTEGER: JsonSchema = {"type": "integer", "minimum": 0}
TEXT: JsonSchema = {"type": "string"}
TIME: JsonSchema = {"type": "string", "format": "date-time"}
NULLABLE_TEXT: JsonSchema = {"type": ["string", "null"]}
NULLABLE_INTEGER: JsonSchema = {"type": ["integer", "null"]}


def shape(required: dict[str, JsonSchema], **optional: JsonSchema) -> JsonSchema:
    return {"type": "object", "required": sorted(required),
            "properties": {**required, **optional}}


def spec(schema: JsonSchema, status: int, media_type: str = "application/json") -> ResponseSpec:
    return ResponseSpec(data_container=Annotated[dict[str, Any], Published(schema)],  # type: ignore[arg-type]
                        media_type=media_type, generate_examples=False,
                        description=HTTPStatus(status).phrase)


def stream_view() -> JsonSchema:
    return shape({
        "run_id": ID_FIELDS["run_id"], "stream_id": ID_FIELDS["stream_id"],
        "definition": definition_schema(),
        "status": shape({"head": INTEGER, "earliest": INTEGER, "closed": {"type": "boolean"},
                         "legal_hold": {"type": "boolean"},
                         "consumers": {"type": "object", "additionalProperties": INTEGER}},
                        erased={"type": "boolean"}, pending_inputs=INTEGER,
                        dead_letters=INTEGER,
                        unread={**shape({"items": INTEGER, "bytes": INTEGER}),
                                "description": "What the slowest declared consumer has not "
                                               "acked: the credit used out of the "
                                               "definition's unread ceiling."}),
        "created_at": TIME})


def record_envelope() -> JsonSchema:
    """A stored record, as a page and a `record` event carry it: exactly one body."""
    reference = shape({"object_id": ID_FIELDS["object_id"], "size": INTEGER,
                       "sha256": {"type": "string", "pattern": "^[0-9a-f]{64}$"},
                       "content_type": TEXT,
                       "href": {**TEXT, "description": "Where `GET` streams the body."}})
    envelope = shape(
        {"sequence": INTEGER, "content_type": TEXT, "appended_at": TIME},
        payload={"description": "A JSON record's body: any JSON value, as stored (after "
                                "redaction)."},
        data={"type": "string", "contentEncoding": "base64",
              "description": "A binary record's body, base64."},
        object={**reference, "description": "An object record: the committed body's "
                                            "reference."},
        idempotency_key={**TEXT, "description": "The producer's key, when it gave one."})
    envelope["oneOf"] = [{"required": [body]} for body in ("payload", "data", "object")]
    return envelope


EVENT_STREAM = (
    "A text/event-stream of these events, and `: ping` comments: `record` (`id:` its "
    "sequence; `data:` one record object, as in a page of `GET …/records`); `live` (`data:` "
    "`{seq, data, source, attempt, index}`, with `?live=true` only); `resync` (`data:` the "
    "410 `cursor_pruned` problem); `end` (`data:` `{reason, last_sequence}`, reason "
    "`closed`, `token_expired`, `token_revoked` or `shutdown`). After `resync` or `end` the "
    "stream ends; resume with `Last-Event-ID: last_sequence`.")
"""The subscribe route's 200 (frames: `entrypoints.http.sse.subscription`)."""
RUN_EVENT_STREAM = (
    "A text/event-stream of these events, each naming its stream, and `: ping` comments: "
    "`record` (`id:` the compound cursor after it; `data:` one record object with its "
    "`stream_id`); `live` (`data:` `{stream_id, seq, data, source, attempt, index}`, with "
    "`?live=true` only); `resync` (`data:` the 410 `cursor_pruned` problem with its "
    "`stream_id`) and `end` (`data:` `{stream_id, reason, last_sequence}`, reason `closed`) "
    "end one stream; `run_end` (`data:` `{reason, cursor}`, reason `erased`, "
    "`too_many_streams`, `token_expired`, `token_revoked` or `shutdown`) ends the "
    "subscription; resume with `Last-Event-ID: <cursor>`.")
"""The run subscribe route's 200 (frames: `entrypoints.http.sse.run_frames`)."""


def records_page() -> JsonSchema:
    return shape({"records": {"type": "array", "items": record_envelope()},
                  "next_cursor": INTEGER, "head": INTEGER, "earliest": INTEGER,
                  "closed": {"type": "boolean"}})


def stream_list() -> JsonSchema:
    return shape({"run_id": ID_FIELDS["run_id"],
                  "streams": {"type": "array", "items": stream_view()}})


def appended() -> JsonSchema:
    return shape({"sequences": {"type": "array", "items": INTEGER}, "head": INTEGER},
                 duplicates={"type": "array", "items": INTEGER, "uniqueItems": True,
                             "description": "Positions (from 0) of the batch's records whose "
                                            "idempotency key was used before: they stored "
                                            "nothing and carry the first copy's sequence."})


def accepted() -> JsonSchema:
    return shape({"accepted": INTEGER})


def acked() -> JsonSchema:
    return shape({"consumer_id": ID_FIELDS["consumer_id"], "acked": INTEGER})


def closed() -> JsonSchema:
    return shape({"closed": {"const": True}, "head": INTEGER})


def legal_hold() -> JsonSchema:
    return shape({"held": {"type": "boolean"}, "reason": NULLABLE_TEXT})


def erased() -> JsonSchema:
    elsewhere = shape({"stream_id": ID_FIELDS["stream_id"], "metadata_home": TEXT})
    return shape({"streams": INTEGER, "records_deleted": INTEGER, "objects_deleted": INTEGER,
                  "held_streams": {"type": "array", "items": TEXT}},
                 elsewhere={"type": "array", "items": elsewhere})


def stream_deleted() -> JsonSchema:
    return shape({"run_id": ID_FIELDS["run_id"], "stream_id": ID_FIELDS["stream_id"],
                  "deleted": {"const": True}, "records_deleted": INTEGER,
                  "objects_deleted": INTEGER})


STATES = ["prepared", "uploaded", "committed", "aborted", "expired"]


def object_state(*states: str) -> JsonSchema:
    return shape({"state": {"enum": list(states or STATES)}})


def prepared() -> JsonSchema:
    return shape({"object_id": ID_FIELDS["object_id"], "state": {"enum": STATES},
                  "upload_url": TEXT, "expires_at": TIME})


def committed() -> JsonSchema:
    return shape({"sequence": INTEGER, "state": {"const": "committed"}})


def object_view() -> JsonSchema:
    return shape({"object_id": ID_FIELDS["object_id"], "state": {"enum": STATES},
                  "size": INTEGER, "sha256": TEXT, "content_type": TEXT,
                  "expires_at": TIME}, schema=NULLABLE_TEXT, sequence=NULLABLE_INTEGER)


def status(value: str) -> JsonSchema:
    return shape({"status": {"const": value}})


def subscribe_token() -> JsonSchema:
    return shape({"token": TEXT, "expires_at": TIME})


def run_list() -> JsonSchema:
    run = shape({"run_id": ID_FIELDS["run_id"], "streams": INTEGER, "created_at": TIME})
    return shape({"runs": {"type": "array", "items": run}, "next_cursor": NULLABLE_TEXT})


SEQUENCES: JsonSchema = {"type": "array", "items": INTEGER}


def deliveries() -> JsonSchema:
    dead = shape({"sequence": INTEGER, "attempts": INTEGER, "last_error": NULLABLE_TEXT})
    redrive = shape({"by": TEXT, "at": TIME, "sequences": SEQUENCES})
    return shape({"run_id": ID_FIELDS["run_id"], "stream_id": ID_FIELDS["stream_id"],
                  "direction": {"enum": ["input", "output"]}, "pending": INTEGER,
                  "dead_letter_count": INTEGER,
                  "dead_letters": {"type": "array", "items": dead},
                  "redrives": {"type": "array", "items": redrive}})


def redriven() -> JsonSchema:
    return shape({"run_id": ID_FIELDS["run_id"], "stream_id": ID_FIELDS["stream_id"],
                  "redriven": SEQUENCES, "not_dead": SEQUENCES, "not_retained": SEQUENCES,
                  "dead_letter_count": INTEGER})
