"""The stream definition: every pin a stream carries for life (the groups: `pins.py`).

Rules:
- pins are validated and defaulted once, at creation, and never change after;
- defaults that depend on where the stream is created (the node's region) are filled by
  `build_definition`, so a stored definition is always complete;
- a forbidden content class is refused in any disguise, on every path that builds a
  definition, before any other error.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, ValidationError, field_validator

from domain.content_class import (
    FORBIDDEN_CONTENT_CLASSES,
    normalize_content_class,
    refuse_forbidden,
)
from domain.credit_ceilings import DEFAULT_CEILINGS, CreditCeilings, ensure_within_ceilings
from domain.errors import ConsumerNotFound, InvalidDefinition
from domain.identifiers import validate_id
from domain.pins import (
    AuthorizationPins,
    ConsumerDeclaration,
    ConsumerPin,
    CreditPins,
    Id,
    Pins,
    PlacementPins,
    RedactionPins,
    RetentionPins,
    declaration,
    declared_id,
)
from domain.text import first_unstorable

__all__ = ["FORBIDDEN_CONTENT_CLASSES", "StreamDefinition", "build_definition"]

MAX_CONSUMERS = 64
MAX_EXPIRES_AFTER_SECONDS = 10 * 366 * 24 * 3600
"""Ten years: a stream pinned to expire does so within a span anyone can reason about."""


class StreamDefinition(Pins):
    """The complete, immutable definition of one stream."""

    stream_id: Id
    direction: Literal["output", "input"] = "output"
    mode: Literal["durable", "best_effort"] = "durable"
    content_class: str = Field(min_length=1, max_length=128)
    credit: CreditPins = CreditPins()
    retention: RetentionPins = RetentionPins()
    expires_after_seconds: int | None = Field(None, gt=0, le=MAX_EXPIRES_AFTER_SECONDS)
    """Seconds after its creation at which the whole stream is deleted (docs/adr/0076)."""
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
            value = tuple(declaration(consumer) for consumer in value)
            ids = [declared_id(consumer) for consumer in value]
            if len(set(ids)) != len(ids):
                raise ValueError("consumers must be unique")
        return value

    @property
    def consumer_ids(self) -> tuple[str, ...]:
        """The declared consumers: the only ones that exist, and the only ones that gate
        producer credit."""
        return tuple(declared_id(consumer) for consumer in self.consumers)

    def consumer_principals(self, consumer_id: str) -> tuple[str, ...] | None:
        """Who may ack a declared consumer: its pinned principals, or None for any reader.

        Raises `ConsumerNotFound` for an undeclared id."""
        for consumer in self.consumers:
            if declared_id(consumer) == consumer_id:
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
