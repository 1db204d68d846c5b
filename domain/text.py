"""Text the store can keep: what every client-chosen string that is stored must be.

Postgres `text` and `jsonb` hold no U+0000, and UTF-8 has no lone surrogates (JSON's
`\\ud800` escapes decode to them). Such a string is refused as bad input, before any work,
instead of failing at the store (a 500). Record payloads are exempt: they are stored as
`json` text, which keeps `\\u0000` escapes, and their encoding already refuses surrogates.
"""

from __future__ import annotations

from typing import Any


def is_storable(text: str) -> bool:
    if "\x00" in text:
        return False
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def first_unstorable(value: Any) -> str | None:
    """The JSON-pointer-like path of the first key or string in `value` that is not storable
    ("" for `value` itself), or None. Iterative: any depth is safe."""
    pending: list[tuple[Any, str]] = [(value, "")]
    while pending:
        node, where = pending.pop()
        if isinstance(node, str):
            if not is_storable(node):
                return where
        elif isinstance(node, dict):
            for key, item in node.items():
                if isinstance(key, str) and not is_storable(key):
                    return where
                pending.append((item, f"{where}.{key}" if where else str(key)))
        elif isinstance(node, list | tuple):
            pending.extend((item, f"{where}.{index}") for index, item in enumerate(node))
    return None
