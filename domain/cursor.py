"""The exact cursor rule: a cursor `c` reads records with `sequence > c`.

`earliest` is the lowest sequence still retained (head + 1 when nothing is);
`head` is the highest sequence ever assigned (0 for a new stream).
"""

from __future__ import annotations

from domain.errors import CursorPruned, FutureCursor, InvalidCursor

MAX_SEQUENCE = 2**63 - 1


def parse_cursor(raw: str | None, what: str = "after") -> int | None:
    """Parse a cursor from text; absent is None, anything but a non-negative integer is refused."""
    if raw is None:
        return None
    text = raw.strip()
    if not text.isascii() or not text.isdigit() or len(text) > 19:
        raise InvalidCursor(f"{what} must be a non-negative integer", field=what)
    value = int(text)
    if value > MAX_SEQUENCE:
        raise InvalidCursor(f"{what} is out of range", field=what)
    return value


def check_cursor(cursor: int, earliest: int, head: int) -> None:
    """Refuse a cursor beyond head (future) or one whose successor was pruned."""
    if cursor < 0:
        raise InvalidCursor("cursor must be non-negative")
    if cursor > head:
        raise FutureCursor(f"cursor {cursor} is beyond head {head}", requested=cursor, head=head)
    if cursor + 1 < earliest:
        raise CursorPruned(requested=cursor, earliest=earliest, latest=head)
