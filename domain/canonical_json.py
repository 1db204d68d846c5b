"""The one compact JSON encoder: the canonical text of every JSON value Runnel stores,
signs or sends (record payloads and their rows, NOTIFY bodies, live chunks, webhook
bodies).

Rules:
- compact separators, text as UTF-8 (no `\\u` escapes), keys in the order given;
- NaN and the infinities are refused (they are not JSON), as is anything JSON has no
  value for.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from domain.errors import InvalidRecord

# One encoder for all: json.dumps with options builds a new encoder per call.
compact_text: Callable[[Any], str] = json.JSONEncoder(
    separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode
"""The canonical text; raises ValueError (NaN, infinities) or TypeError (no JSON value)."""


def compact_json(value: Any) -> bytes:
    """The canonical encoding of a JSON value: its compact text in UTF-8.

    Values JSON cannot carry faithfully (NaN, infinities, unpaired surrogates,
    non-JSON types) are refused here, before anything is stored or sent.
    """
    try:
        return compact_text(value).encode()
    except (ValueError, TypeError, UnicodeEncodeError) as error:
        raise InvalidRecord(f"not representable as JSON: {error}") from None
