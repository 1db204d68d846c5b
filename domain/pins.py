"""The pins of a stream definition, group by group: credit, retention, redaction,
placement, authorization, and the declared consumers (`definition.py` holds them together).

Rules:
- every group is strict (values of the types JSON gives, no unknown field) and frozen;
- absolute maxima bound each pin whatever a node's `CreditCeilings` say (those may only
  be lower);
- a list in JSON is a tuple here, each entry checked as it is read.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationInfo,
    WithJsonSchema,
    field_validator,
    model_validator,
)

from domain.credit_ceilings import INT64_MAX
from domain.identifiers import id_json_schema, validate_id
from domain.redaction import parse_pointer

MAX_UNREAD_ITEMS_CEILING = INT64_MAX
"""Absolute maxima, whatever a node's `CreditCeilings` say (those may only be lower).
Unread items cost nothing to count (byte offsets, ADR 0047): only a bigint bounds them."""
MAX_OPEN_OBJECTS_CEILING = 10_000
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


class Pins(BaseModel):
    """The base of every pin group and of the definition: strict, closed and frozen."""

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)


class CreditPins(Pins):
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


class RetentionPins(Pins):
    max_age_seconds: int | None = Field(None, gt=0, le=INT64_MAX)
    max_records: int | None = Field(None, gt=0, le=INT64_MAX)


class RedactionPins(Pins):
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


class PlacementPins(Pins):
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


class AuthorizationPins(Pins):
    readers: tuple[str, ...] = ("*",)
    writers: tuple[str, ...] = ("*",)

    @field_validator("readers", "writers", mode="before")
    @classmethod
    def _tuple(cls, value: Any) -> Any:
        return tuple(value) if isinstance(value, list) else value


class ConsumerPin(Pins):
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


def declaration(value: Any) -> Any:
    """The stored form of one declaration: `{"id": x}` without principals is the plain id,
    so the two spellings of the same declaration are one definition."""
    if isinstance(value, dict):
        if value.get("principals") is None and set(value) <= {"id", "principals"}:
            return declaration(value.get("id"))
        return ConsumerPin.model_validate(value)
    if isinstance(value, str):
        return validate_id(value, "consumer_id")
    if isinstance(value, ConsumerPin):
        return value
    raise ValueError("a consumer is an id or an object with id and principals")


def declared_id(consumer: ConsumerDeclaration) -> str:
    """The id of a declaration, either spelling."""
    return consumer.id if isinstance(consumer, ConsumerPin) else consumer
