"""The stream definition: every pin a stream carries for life.

Pins are validated and defaulted once, at creation, and never change after.
Defaults that depend on where the stream is created (the node's region) are
filled by `build_definition`, so a stored definition is always complete.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    WithJsonSchema,
    field_validator,
    model_validator,
)

from domain.content_class import (
    FORBIDDEN_CONTENT_CLASSES,
    normalize_content_class,
    refuse_forbidden,
)
from domain.credit_ceilings import (
    DEFAULT_CEILINGS,
    INT64_MAX,
    CreditCeilings,
    ensure_within_ceilings,
)
from domain.errors import ConsumerNotFound, InvalidDefinition
from domain.identifiers import id_json_schema, validate_id
from domain.redaction import parse_pointer
from domain.text import first_unstorable

__all__ = ["FORBIDDEN_CONTENT_CLASSES", "StreamDefinition", "build_definition"]

MAX_UNREAD_ITEMS_CEILING = INT64_MAX
"""Absolute maxima, whatever a node's `CreditCeilings` say (those may only be lower).
Unread items cost nothing to count (byte offsets, ADR 0047): only a bigint bounds them."""
MAX_OPEN_OBJECTS_CEILING = 10_000
MAX_CONSUMERS = 64
MAX_CONSUMER_PRINCIPALS = 64
PRINCIPAL_MAX_LENGTH = 256

Id = Annotated[str, WithJsonSchema(id_json_schema())]
"""An id field. Its validator calls `validate_id` (400 `invalid_identifier`); the annotation
only publishes the same rule in the JSON Schema."""
PrincipalName = Annotated[str, WithJsonSchema(
    {"type": "string", "minLength": 1, "maxLength": PRINCIPAL_MAX_LENGTH})]


def _each(value: Any, check: Callable[[Any], object]) -> Any:
    """A JSON list as a tuple, each entry checked; anything else is left to type checks."""
    if isinstance(value, list):
        value = tuple(value)
    if isinstance(value, tuple):
        for entry in value:
            check(entry)
    return value


def _pointer(entry: Any) -> None:
    if not isinstance(entry, str):
        raise ValueError("mask entries must be JSON pointers")
    parse_pointer(entry)


def _principal(entry: Any) -> None:
    if not isinstance(entry, str) or not 0 < len(entry) <= PRINCIPAL_MAX_LENGTH:
        raise ValueError(f"principals must be strings of 1-{PRINCIPAL_MAX_LENGTH} chars")


class _Pins(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)


class CreditPins(_Pins):
    max_unread_items: int = Field(1000, gt=0, le=MAX_UNREAD_ITEMS_CEILING)
    max_unread_bytes: int = Field(8 * 1024 * 1024, gt=0, le=INT64_MAX)
    max_total_items: int = Field(100_000, gt=0, le=INT64_MAX)
    max_total_bytes: int = Field(1024 * 1024 * 1024, gt=0, le=INT64_MAX)
    max_open_objects: int = Field(100, gt=0, le=MAX_OPEN_OBJECTS_CEILING)
    """Object intents prepared or uploaded and not yet committed, aborted or expired."""
    on_unread_full: Literal["reject", "block"] = "reject"
    block_timeout_seconds: float = Field(5.0, ge=0, le=60)

    @field_validator("block_timeout_seconds", mode="before")
    @classmethod
    def _number(cls, value: Any) -> Any:
        return float(value) if isinstance(value, int) and not isinstance(value, bool) else value


class RetentionPins(_Pins):
    max_age_seconds: int | None = Field(None, gt=0, le=INT64_MAX)
    max_records: int | None = Field(None, gt=0, le=INT64_MAX)


class RedactionPins(_Pins):
    """`mask`: JSON pointers (RFC 6901) masked in every body before it is stored or sent;
    a body no mask can reach (`data` that is not JSON, an object) is refused (422
    `redaction_unenforceable`). `allow_unmasked_bodies`: keep such bodies as sent
    instead; only with a mask, so that one meaning has one spelling."""

    mask: tuple[str, ...] = ()
    allow_unmasked_bodies: bool = False

    @field_validator("mask", mode="before")
    @classmethod
    def _pointers(cls, value: Any) -> Any:
        return _each(value, _pointer)

    @field_validator("allow_unmasked_bodies")
    @classmethod
    def _opt_in_needs_a_mask(cls, value: bool, info: ValidationInfo) -> bool:
        if value and not info.data.get("mask"):
            raise ValueError("needs a mask (without one, every body is kept as sent)")
        return value


class PlacementPins(_Pins):
    metadata_home: Id
    metadata_replicas: tuple[Id, ...] = ()
    # Checked by `_regions` (the message names the field); the extra only publishes it.
    object_regions: tuple[Id, ...] = Field(json_schema_extra={"minItems": 1})
    client_egress_regions: tuple[Id, ...] = Field(json_schema_extra={"minItems": 1})
    log_region: Id

    @field_validator("metadata_replicas", "object_regions", "client_egress_regions", mode="before")
    @classmethod
    def _tuple(cls, value: Any) -> Any:
        return tuple(value) if isinstance(value, list) else value

    @model_validator(mode="after")
    def _regions(self) -> PlacementPins:
        for region in (self.metadata_home, self.log_region, *self.metadata_replicas,
                       *self.object_regions, *self.client_egress_regions):
            validate_id(region, "region")
        if not self.object_regions:
            raise ValueError("object_regions must not be empty")
        if not self.client_egress_regions:
            raise ValueError("client_egress_regions must not be empty")
        if self.metadata_home in self.metadata_replicas:
            raise ValueError("metadata_home must not also be a replica")
        return self


class AuthorizationPins(_Pins):
    readers: tuple[str, ...] = ("*",)
    writers: tuple[str, ...] = ("*",)

    @field_validator("readers", "writers", mode="before")
    @classmethod
    def _tuple(cls, value: Any) -> Any:
        return tuple(value) if isinstance(value, list) else value


class ConsumerPin(_Pins):
    """A declared consumer that only the listed principals (token subjects) may ack."""

    id: Id
    principals: tuple[PrincipalName, ...] = Field(min_length=1,
                                                  max_length=MAX_CONSUMER_PRINCIPALS)

    @field_validator("id")
    @classmethod
    def _id(cls, value: str) -> str:
        return validate_id(value, "consumer_id")

    @field_validator("principals", mode="before")
    @classmethod
    def _principals(cls, value: Any) -> Any:
        return _each(value, _principal)


ConsumerDeclaration = Id | ConsumerPin
"""A plain id (any of the stream's readers may ack it) or a `ConsumerPin`."""


def _declaration(value: Any) -> Any:
    """The stored form of one declaration: `{"id": x}` without principals is the plain id,
    so the two spellings of the same declaration are one definition."""
    if isinstance(value, dict):
        if value.get("principals") is None and set(value) <= {"id", "principals"}:
            return _declaration(value.get("id"))
        return ConsumerPin.model_validate(value)
    if isinstance(value, str):
        return validate_id(value, "consumer_id")
    if isinstance(value, ConsumerPin):
        return value
    raise ValueError("a consumer is an id or an object with id and principals")


class StreamDefinition(_Pins):
    """The complete, immutable definition of one stream."""

    stream_id: Id
    direction: Literal["output", "input"] = "output"
    mode: Literal["durable", "best_effort"] = "durable"
    content_class: str = Field(min_length=1, max_length=128)
    credit: CreditPins = CreditPins()
    retention: RetentionPins = RetentionPins()
    redaction: RedactionPins = RedactionPins()
    placement: PlacementPins
    authorization: AuthorizationPins = AuthorizationPins()
    consumers: tuple[ConsumerDeclaration, ...] = Field(
        (), json_schema_extra={"maxItems": MAX_CONSUMERS, "uniqueItems": True})

    @field_validator("consumers", mode="before")
    @classmethod
    def _consumers(cls, value: Any) -> Any:
        if isinstance(value, list):
            value = tuple(value)
        if isinstance(value, tuple):
            if len(value) > MAX_CONSUMERS:
                raise ValueError(f"at most {MAX_CONSUMERS} consumers")
            value = tuple(_declaration(consumer) for consumer in value)
            ids = [_consumer_id(consumer) for consumer in value]
            if len(set(ids)) != len(ids):
                raise ValueError("consumers must be unique")
        return value

    @property
    def consumer_ids(self) -> tuple[str, ...]:
        """The declared consumers: the only ones that exist, and the only ones that gate
        producer credit."""
        return tuple(_consumer_id(consumer) for consumer in self.consumers)

    def consumer_principals(self, consumer_id: str) -> tuple[str, ...] | None:
        """Who may ack a declared consumer: its pinned principals, or None for any reader.

        Raises `ConsumerNotFound` for an undeclared id."""
        for consumer in self.consumers:
            if _consumer_id(consumer) == consumer_id:
                return consumer.principals if isinstance(consumer, ConsumerPin) else None
        raise ConsumerNotFound(f"consumer {consumer_id!r} is not declared by the stream",
                               consumer_id=consumer_id)

    @field_validator("stream_id")
    @classmethod
    def _stream_id(cls, value: str) -> str:
        return validate_id(value, "stream_id")

    @field_validator("content_class")
    @classmethod
    def _content_class(cls, value: str) -> str:
        # Here, not only in `build_definition`: a definition loaded from storage or built
        # by any other path must not carry a forbidden class either, in any disguise.
        # Only `build_definition` normalises: a stored pin is never rewritten on load.
        refuse_forbidden(value)
        return value

    def to_wire(self) -> dict[str, Any]:
        return self.model_dump(mode="json")


def _consumer_id(consumer: ConsumerDeclaration) -> str:
    return consumer.id if isinstance(consumer, ConsumerPin) else consumer


def default_placement(node_region: str) -> dict[str, Any]:
    return {
        "metadata_home": node_region,
        "metadata_replicas": [],
        "object_regions": [node_region],
        "client_egress_regions": [node_region],
        "log_region": node_region,
    }


def build_definition(raw: dict[str, Any], node_region: str,
                     ceilings: CreditCeilings = DEFAULT_CEILINGS) -> StreamDefinition:
    """Validate a requested definition and fill every default.

    The content class is pinned in its normalised spelling (`content_class.py`) and
    the credit pins must be within the node's `ceilings`. Raises `ForbiddenContentClass`
    for raw hidden model reasoning (in any disguise) and `InvalidDefinition` (with the
    offending field) for anything else.
    """
    if not isinstance(raw, dict):
        raise InvalidDefinition("definition must be a JSON object")
    # Checked before anything else so the forbidden class wins over any other error.
    refuse_forbidden(raw.get("content_class"))
    where = first_unstorable(raw)
    if where is not None:
        raise InvalidDefinition(f"{where or 'definition'}: text may not contain U+0000 or "
                                "lone surrogates", field=where or "definition")
    filled = dict(raw)
    if "content_class" in filled:
        filled["content_class"] = normalize_content_class(filled["content_class"])
    if filled.get("placement") is None:
        filled["placement"] = default_placement(node_region)
    elif isinstance(filled["placement"], dict):
        home = filled["placement"].get("metadata_home", node_region)
        base = default_placement(home if isinstance(home, str) else node_region)
        filled["placement"] = base | filled["placement"]
    try:
        definition = StreamDefinition.model_validate(filled)
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "definition"
        raise InvalidDefinition(f"{where}: {first['msg']}", field=where) from None
    ensure_within_ceilings(definition.credit, ceilings)
    return definition
