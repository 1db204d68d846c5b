"""The rules the API validates with, published in its OpenAPI document (ADR 0026).

Generated clients and fuzzers read `/schema/openapi.json`; it must say what the server
really accepts and answers, or they probe blind.

Rules:
- One home per rule: every published bound is read from the constant or the model the
  code validates with (`domain.identifiers`, `domain.definition`, `domain.records`, …),
  never typed a second time here.
- Ids by name: every parameter or field named in `ID_FIELDS` (`run_id`, `stream_id`,
  `consumer_id`, `object_id`), on any route, present or future, carries its id's schema.
- Shapes by marker: a field annotated `Annotated[T, Published(schema)]` is published with
  that JSON Schema while it is still parsed as `T` (so the domain keeps its own,
  field-precise refusals: 422 `invalid_record`, `invalid_definition`, …).
- Publishing never validates: it describes what the validators already do.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, Any

from litestar.openapi.spec import (
    OpenAPIFormat,
    OpenAPIMediaType,
    OpenAPIType,
    Operation,
    Reference,
    RequestBody,
    Schema,
)
from litestar.plugins import OpenAPISchemaPlugin
from litestar.typing import FieldDefinition

from application.live import MAX_CHUNKS_PER_REQUEST
from application.reading import DEFAULT_LIMIT, MAX_LIMIT, MAX_WAIT_SECONDS
from domain.cursor import MAX_SEQUENCE
from domain.definition import FORBIDDEN_CONTENT_CLASSES, StreamDefinition
from domain.identifiers import OBJECT_ID_REGEX, id_json_schema
from domain.live_chunk import LIVE_CHUNK_MAX_BYTES
from domain.masking import MAX_JSON_DEPTH
from domain.media_type import MEDIA_TYPE_MAX_CHARS, MEDIA_TYPE_REGEX
from domain.records import (
    BASE64_REGEX,
    IDEMPOTENCY_KEY_MAX,
    INLINE_MAX_BYTES,
    OBJECT_MAX_BYTES,
)
from domain.stream import MAX_BATCH

JsonSchema = dict[str, Any]


@dataclass(frozen=True)
class Published:
    """Annotation marker: publish this JSON Schema for the field (documentation only)."""

    schema: JsonSchema = field(hash=False)


def object_id_schema() -> JsonSchema:
    return {"type": "string", "format": "uuid", "pattern": OBJECT_ID_REGEX}


ID_FIELDS: dict[str, JsonSchema] = {
    "run_id": id_json_schema(),
    "stream_id": id_json_schema(),
    "consumer_id": id_json_schema(),
    "object_id": object_id_schema(),
}


class PublishedRules(OpenAPISchemaPlugin):
    """Litestar's schema hook for ids (by name) and `Published` fields (by marker)."""

    def is_plugin_supported_field(self, field_definition: FieldDefinition) -> bool:
        return _marker(field_definition) is not None or (
            field_definition.name in ID_FIELDS and field_definition.annotation is str)

    def to_openapi_schema(self, field_definition: FieldDefinition,
                          schema_creator: Any) -> Schema:
        marker = _marker(field_definition)
        schema = marker.schema if marker is not None else ID_FIELDS[field_definition.name]
        return to_schema(schema)


def _marker(field_definition: FieldDefinition) -> Published | None:
    return next((m for m in field_definition.metadata if isinstance(m, Published)), None)


def inline_refs(schema: JsonSchema) -> JsonSchema:
    """A JSON Schema with its local `$defs` references inlined (pydantic emits them; the
    published schemas are small and not recursive)."""
    definitions = schema.get("$defs", {})

    def resolve(node: Any) -> Any:
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith("#/$defs/"):
                merged = {**definitions[ref.removeprefix("#/$defs/")],
                          **{k: v for k, v in node.items() if k != "$ref"}}
                return resolve(merged)
            return {k: resolve(v) for k, v in node.items() if k != "$defs"}
        if isinstance(node, list):
            return [resolve(item) for item in node]
        return node

    resolved: JsonSchema = resolve(schema)
    return resolved


_SCHEMA_KEYS = {"not": "schema_not", "if": "schema_if", "else": "schema_else",
                "$ref": "ref"}
_SUBSCHEMA_LISTS = {"allOf", "anyOf", "oneOf", "prefixItems"}
_SUBSCHEMA = {"not", "items", "contains", "additionalProperties", "propertyNames",
              "if", "then", "else"}
_SUBSCHEMA_MAPS = {"properties", "patternProperties"}
_DROPPED = {"title", "$defs", "$schema"}


def to_schema(schema: JsonSchema) -> Schema:
    """Litestar's `Schema` for a JSON Schema dict (the keywords OpenAPI 3.1 shares with it)."""
    converted = _convert(inline_refs(schema))
    assert isinstance(converted, Schema)
    return converted


def _convert(node: Any) -> Schema | Reference | bool:
    if isinstance(node, bool):
        return node
    kwargs: dict[str, Any] = {}
    for key, value in node.items():
        if key in _DROPPED:
            continue
        name = _SCHEMA_KEYS.get(key) or _snake(key)
        if key in _SUBSCHEMA_LISTS:
            value = [_convert(item) for item in value]
        elif key in _SUBSCHEMA:
            value = _convert(value)
        elif key in _SUBSCHEMA_MAPS:
            value = {k: _convert(v) for k, v in value.items()}
        elif key == "type":
            value = ([OpenAPIType(item) for item in value] if isinstance(value, list)
                     else OpenAPIType(value))
        elif key == "default" and value is None:
            continue
        kwargs[name] = value
    return Schema(**kwargs)


def _snake(key: str) -> str:
    return "".join(f"_{char.lower()}" if char.isupper() else char for char in key)


def definition_request_schema() -> JsonSchema:
    """`POST …/streams`: the domain's `StreamDefinition`, with what `build_definition` fills
    (the placement, and each of its fields) optional."""
    schema = inline_refs(StreamDefinition.model_json_schema(mode="validation"))
    schema["required"] = [name for name in schema["required"] if name != "placement"]
    placement = schema["properties"]["placement"]
    placement.pop("required", None)
    placement["description"] = ("Defaults to this node's region for every field; a given "
                                "`metadata_home` is the default of the others.")
    schema["description"] = (f"`content_class` {sorted(FORBIDDEN_CONTENT_CLASSES)} and every "
                             "class of its family (a sub-class, a version, a namespaced copy: "
                             "`model.reasoning.raw.v2`, `acme:model.reasoning.raw`) are refused "
                             "(422 `invalid_content_class`). On a stream with a "
                             "`redaction.mask`, bodies that cannot be masked (non-JSON `data`, "
                             "objects) are refused (422 `redaction_unenforceable`) unless "
                             "`redaction.allow_unmasked_bodies` is true.")
    return schema


def definition_schema() -> JsonSchema:
    """A stored definition as responses carry it: every pin, defaults filled."""
    return inline_refs(StreamDefinition.model_json_schema(mode="serialization"))


def record_request_schema() -> JsonSchema:
    """One record of an append (`domain.records.draft_from_wire`)."""
    text = {"type": "string", "minLength": 1}
    return {
        "type": "object",
        "additionalProperties": False,
        "description": (f"Exactly one of `payload` (any JSON, at most {INLINE_MAX_BYTES} bytes "
                        f"as compact UTF-8 after redaction, nested at most {MAX_JSON_DEPTH} "
                        f"levels) or `data` (base64 of at most {INLINE_MAX_BYTES} bytes; on a "
                        "masked stream, JSON `data` is decoded and masked, other `data` refused "
                        "unless the stream allows unmasked bodies)."),
        "properties": {
            "payload": {},
            "data": {"type": "string", "contentEncoding": "base64", "pattern": BASE64_REGEX,
                     "maxLength": 4 * -(-INLINE_MAX_BYTES // 3)},
            "content_type": {**text, "maxLength": MEDIA_TYPE_MAX_CHARS,
                             "pattern": MEDIA_TYPE_REGEX},
            "idempotency_key": {**text, "maxLength": IDEMPOTENCY_KEY_MAX},
        },
        "oneOf": [{"required": ["payload"], "not": {"required": ["data"]}},
                  {"required": ["data"], "not": {"required": ["payload"]}}],
    }


def records_request_schema() -> JsonSchema:
    return {"type": "array", "minItems": 1, "maxItems": MAX_BATCH,
            "items": record_request_schema()}


def chunks_request_schema() -> JsonSchema:
    return {"type": "array", "minItems": 1, "maxItems": MAX_CHUNKS_PER_REQUEST, "items": {},
            "description": f"Each chunk over {LIVE_CHUNK_MAX_BYTES} serialized bytes arrives "
                           "as `{\"_truncated\": true, \"bytes\": N}`."}


def optional(schema: JsonSchema) -> JsonSchema:
    return {"oneOf": [schema, {"type": "null"}]}


def cursor_schema() -> JsonSchema:
    """`after` and `Last-Event-ID` (`domain.cursor.parse_cursor`)."""
    return {"type": "integer", "minimum": 0, "maximum": MAX_SEQUENCE}


def limit_schema() -> JsonSchema:
    """`limit` (`inputs.page_limit`, then the reading use case's range)."""
    return {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "default": DEFAULT_LIMIT}


def wait_schema() -> JsonSchema:
    """`wait` (`inputs.wait_seconds`, then the reading use case's bound)."""
    return {"type": "number", "minimum": 0, "maximum": MAX_WAIT_SECONDS, "default": 0}


CursorText = Annotated[str, Published(cursor_schema())]
"""A cursor as its text arrives (parsed by `entrypoints.http.inputs`), published as the
integer it must spell."""
LimitText = Annotated[str, Published(limit_schema())]
WaitText = Annotated[str, Published(wait_schema())]


@dataclass
class RawBodyOperation(Operation):
    """The operation of a route that streams its raw body itself (no `data` parameter, so
    Litestar would document none): any bytes, at most `OBJECT_MAX_BYTES`."""

    def __post_init__(self) -> None:
        if self.request_body is None:
            self.request_body = RequestBody(required=True, content={
                "application/octet-stream": OpenAPIMediaType(schema=Schema(
                    type=OpenAPIType.STRING, format=OpenAPIFormat.BINARY,
                    max_length=OBJECT_MAX_BYTES,
                    description="Exactly the prepared size and SHA-256."))})
