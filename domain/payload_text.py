"""A payload's canonical text, computed in C when that is provably the same text (ADR 0049).

The canonical text of a JSON value is `canonical_json.compact_json`'s: compact
separators, UTF-8, keys in the order given. msgspec's encoder writes exactly that for
every value decoded from JSON (same separators, same string escapes, keys in order,
integers of any size alike) but one kind: floats, whose exponent it spells otherwise
(`1e16` for `1e+16`, `1.5e-7` for `1.5e-07`, `0.00001` for `1e-05`). Every float it
writes has a digit followed by `.`, `e` or `E`, so a text without that pair has no float
and is the canonical text; one with it (a float, or only a string such as `"v1.2"`) is
encoded again by `compact_json`. Either way the result is the canonical text itself.
"""

from __future__ import annotations

import re
from typing import Any

import msgspec

from domain.canonical_json import compact_json

_MAYBE_FLOAT = re.compile(rb"[0-9][.eE]")
_encode = msgspec.json.Encoder().encode


def canonical_text(value: Any, decoded_from_json: bool) -> bytes:
    """`compact_json(value)`. `decoded_from_json`: the value came from a JSON decoder, so
    it holds no NaN, infinity, unpaired surrogate or non-JSON type (which msgspec would
    encode rather than refuse); only then is msgspec's encoding tried."""
    if decoded_from_json:
        encoded = _encode(value)
        if _MAYBE_FLOAT.search(encoded) is None:
            return encoded
    return compact_json(value)
