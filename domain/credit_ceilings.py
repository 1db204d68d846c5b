"""The node's maxima for a stream's credit pins: what a client may declare at creation.

Rules:

- **Checked at creation only.** A definition is checked against the ceilings of the
  node that creates it; a stored definition is never re-judged (pins are immutable,
  and a lowered ceiling must not make existing streams unreadable).
- **Every ceiling admits the default pins** (those of `CreditPins`). A definition that
  declares no credit always fits, whatever the node is configured with
  (`entrypoints/composition/settings.py` refuses a ceiling below its default).
- **A refusal names the pin and the ceiling.** `invalid_definition` with
  `field: "credit.<pin>"` and `limit`, before anything is stored.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

from domain.errors import InvalidDefinition

INT64_MAX = 2**63 - 1
"""No count or byte pin may exceed what a Postgres bigint holds, whatever the ceilings."""


@dataclass(frozen=True)
class CreditCeilings:
    """Per pin, the largest value a new definition may declare."""

    max_unread_items: int = 10_000_000
    max_unread_bytes: int = 256 * 1024 * 1024
    max_total_items: int = 10_000_000
    max_total_bytes: int = 64 * 1024**3
    max_open_objects: int = 10_000


DEFAULT_CEILINGS = CreditCeilings()


def ensure_within_ceilings(credit: object, ceilings: CreditCeilings) -> None:
    """Refuse the first credit pin above its ceiling (`credit` is a `CreditPins`)."""
    for ceiling in fields(CreditCeilings):
        declared = getattr(credit, ceiling.name)
        limit = getattr(ceilings, ceiling.name)
        if declared > limit:
            raise InvalidDefinition(
                f"credit.{ceiling.name}: {declared} is above this server's ceiling {limit}",
                field=f"credit.{ceiling.name}", limit=limit)
