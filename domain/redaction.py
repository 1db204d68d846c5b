"""Redaction: JSON-pointer paths (RFC 6901) masked before a record is stored."""

from __future__ import annotations

import copy
from typing import Any

MASK = "[redacted]"


def parse_pointer(pointer: str) -> tuple[str, ...]:
    """Split an RFC 6901 pointer into unescaped tokens; the empty pointer is refused."""
    if not pointer.startswith("/"):
        raise ValueError(f"{pointer!r} is not a JSON pointer (must start with '/')")
    tokens = pointer[1:].split("/")
    for token in tokens:
        stripped = token.replace("~0", "").replace("~1", "")
        if "~" in stripped:
            raise ValueError(f"{pointer!r} has an invalid '~' escape")
    return tuple(token.replace("~1", "/").replace("~0", "~") for token in tokens)


def redact(payload: Any, pointers: tuple[str, ...]) -> Any:
    """Return the payload with every existing pointed-to value replaced by the mask.

    Pointers that do not resolve are ignored: a mask is a promise about what is
    never stored, not a schema. The input is not modified.
    """
    if not pointers:
        return payload
    result = copy.deepcopy(payload)
    for pointer in pointers:
        _mask(result, parse_pointer(pointer))
    return result


def _mask(node: Any, tokens: tuple[str, ...]) -> None:
    *parents, last = tokens
    for token in parents:
        node = _child(node, token)
        if node is None:
            return
    if isinstance(node, dict) and last in node:
        node[last] = MASK
    elif isinstance(node, list) and (index := _array_index(node, last)) is not None:
        node[index] = MASK


def _child(node: Any, token: str) -> Any:
    if isinstance(node, dict):
        return node.get(token)
    if isinstance(node, list) and (index := _array_index(node, token)) is not None:
        return node[index]
    return None


def _array_index(node: list[Any], token: str) -> int | None:
    # ASCII digits only: `str.isdigit` also accepts "²" or "١", which `int` refuses or
    # reads as a different index than the pointer's author wrote.
    if token.isascii() and token.isdigit() and int(token) < len(node):
        return int(token)
    return None
