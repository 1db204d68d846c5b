"""The one compact JSON encoder module: the canonical text of every JSON value Runnel stores,
signs or sends (record payloads and their rows, NOTIFY bodies, live chunks, webhook
bodies, the state rows of live numbering), and the wire encoder that assembles those texts
into envelopes and frames.

Rules:
- compact separators, text as UTF-8 (no `\\u` escapes), keys in the order given;
- NaN and the infinities are refused (they are not JSON), as is anything JSON has no
  value for;
- a payload has one canonical text, made once when it is accepted (`compact_text`); from
  then on it is handed on as text and spliced into what goes out (`Verbatim` in
  `wire_json`), never parsed and encoded again (ADR 0048).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import msgspec

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


Verbatim = msgspec.Raw
"""JSON text already canonical (a stored payload), spliced into `wire_json` as it is."""

wire_json: Callable[[Any], bytes] = msgspec.json.Encoder().encode
"""Compact JSON (UTF-8) of a value made of parts already checked (an envelope, a frame, a
problem body): fast, and it splices `Verbatim` text unparsed. It does not refuse NaN, so
it is never the first encoder a client's value meets: that is `compact_json`."""
