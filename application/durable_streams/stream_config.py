"""What a PUT of the Durable Streams facade asks for (`StreamConfig`), and when an existing
stream answers a repeated PUT (ADR 0041).

Rules:
- content types compare by media type, case-insensitive, without parameters;
- TTL, Expires-At, the fork source, the fork offset and sub-offset must be the same; a
  fork that asked no offset matches the offset resolved when it was made;
- anything else is `PathInUse` (409); the definition asked is compared by the native
  create (`definition_conflict`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from application.ports.durable_streams import FacadeEntry, PathInUse


@dataclass(frozen=True)
class StreamConfig:
    """What a PUT asks for; an existing stream must match it for a 200."""

    content_type: str
    ttl_seconds: int | None
    expires_at: datetime | None
    forked_from: str | None = None
    fork_offset: int | None = None
    fork_sub_offset: int = 0
    definition: Mapping[str, Any] | None = None
    """The creator's own definition fields (`Runnel-Definition`, ADR 0070); None: none
    asked (and then not compared)."""


@dataclass(frozen=True)
class StreamStatus:
    """A stream's head and closure, as a HEAD or an append answers them."""

    head: int
    closed: bool


def matching(entry: FacadeEntry, config: StreamConfig) -> FacadeEntry:
    """`entry`, when it is what `config` asks for; else `PathInUse`."""
    mine = (entry.content_type.split(";")[0].strip().lower(), entry.ttl_seconds,
            entry.expires_at, entry.forked_from,
            entry.fork_offset if entry.forked_from else None, entry.fork_sub_offset or 0)
    asked = (config.content_type.split(";")[0].strip().lower(), config.ttl_seconds,
             config.expires_at, config.forked_from,
             config.fork_offset if config.forked_from else None, config.fork_sub_offset)
    if config.forked_from is not None and config.fork_offset is None:
        asked = (*asked[:4], mine[4], asked[5])  # no offset asked: the one resolved then
    if mine != asked:
        raise PathInUse("stream exists with a different configuration")
    return entry
