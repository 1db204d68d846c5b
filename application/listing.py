"""A listing page's parameters, checked the same way for every listing (runs, a run's
streams): a limit of 1–1000, a cursor that is an id."""

from __future__ import annotations

from domain.errors import InvalidLimit
from domain.identifiers import validate_id

DEFAULT_LISTING_LIMIT = 100
MAX_LISTING_LIMIT = 1000


def check_listing_page(cursor: str | None, limit: int) -> None:
    """Refuse a limit outside 1–`MAX_LISTING_LIMIT` (400 `invalid_limit`) or a cursor that
    is not an id, before any read."""
    if not 1 <= limit <= MAX_LISTING_LIMIT:
        raise InvalidLimit(f"limit must be between 1 and {MAX_LISTING_LIMIT}", field="limit")
    if cursor is not None:
        validate_id(cursor, "cursor")
