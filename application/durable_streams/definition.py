"""Which Runnel definition a facade stream gets (ADR 0070).

Rules:
- readers and writers default to the creating principal alone, never to everyone: a
  template or a creator that names only one of them leaves the other to the creator;
- the creator is always among the writers (it may re-create, append to and delete what it
  made), and among the readers only where the readers pin says so;
- a tenant's template (the node's setting: the tenant's own, else `*`) comes next, and the
  creator's own fields (the `Runnel-Definition` header) last: each top-level field replaces
  the one before it;
- the facade names the stream (`stream_id`); `content_class` is the facade's unless asked;
- everything else (redaction, credit, retention, consumers, placement) is the native
  definition's, validated by the same rules when the stream is created.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from application.durable_streams.forks import FACADE_STREAM
from domain.errors import InvalidDefinition
from domain.principal import Principal

FACADE_CONTENT_CLASS = "durable_streams.facade"
ANY_TENANT = "*"


def facade_definition(principal: Principal, templates: Mapping[str, Mapping[str, Any]],
                      asked: Mapping[str, Any] | None) -> dict[str, Any]:
    """The raw definition a stream created by `principal` gets."""
    template = templates.get(principal.tenant, templates.get(ANY_TENANT, {}))
    if asked is not None:
        check_fields(asked, "the definition asked")
    merged = {"content_class": FACADE_CONTENT_CLASS, **template, **(asked or {}),
              "stream_id": FACADE_STREAM}
    creator = [principal.sub]
    authorization = merged.get("authorization", {})
    if isinstance(authorization, Mapping):  # anything else is refused by the definition
        writers = authorization.get("writers", creator)
        if isinstance(writers, list) and principal.sub not in writers and "*" not in writers:
            writers = [*writers, principal.sub]
        merged["authorization"] = {"readers": creator, **authorization, "writers": writers}
    return merged


def check_fields(fields: Any, name: str) -> dict[str, Any]:
    """A template or a header: an object that leaves the stream's id to the facade."""
    if not isinstance(fields, dict):
        raise InvalidDefinition(f"{name} must be a JSON object of definition fields")
    if "stream_id" in fields:
        raise InvalidDefinition(f"{name} must not name a stream_id: the facade names the stream")
    return fields
