"""Media types as RFC 9110 §8.3.1 defines them: what a `content_type` may be.

A record's or object's `content_type` is sent back verbatim in a `Content-Type`
header (an object download) and in JSON, so it must be a media type and nothing
else: `type "/" subtype *( OWS ";" OWS parameter )`, each a token of `tchar`, a
parameter value a token or a quoted string of visible ASCII. CR, LF, NUL, other
controls and non-ASCII characters can therefore never reach a header. At most
255 characters. A JSON media type (`is_json_media_type`) is what redaction decodes.
"""

from __future__ import annotations

import re
from typing import Any

from domain.errors import InvalidContentType

MEDIA_TYPE_MAX_CHARS = 255
_TOKEN = r"[!#$%&'*+.^_`|~0-9A-Za-z-]+"
_QUOTED = r'"(?:[\t !#-\[\]-~]|\\[\t -~])*"'
_PARAMETER = rf"[ \t]*;[ \t]*{_TOKEN}=(?:{_TOKEN}|{_QUOTED})"
MEDIA_TYPE_REGEX = rf"^{_TOKEN}/{_TOKEN}(?:{_PARAMETER})*$"
"""The rule as one pattern, also published in the OpenAPI document (ADR 0026)."""
_MEDIA_TYPE = re.compile(MEDIA_TYPE_REGEX)


def is_media_type(value: Any) -> bool:
    return (isinstance(value, str) and len(value) <= MEDIA_TYPE_MAX_CHARS
            and _MEDIA_TYPE.fullmatch(value) is not None)


def validate_media_type(value: Any, field: str = "content_type") -> str:
    """`value` when it is a media type; else `InvalidContentType` (422) naming `field`."""
    if not is_media_type(value):
        raise InvalidContentType(
            f"{field} must be a media type (type/subtype with optional ;name=value "
            f"parameters, RFC 9110) of at most {MEDIA_TYPE_MAX_CHARS} characters",
            field=field)
    return str(value)


def is_json_media_type(value: str) -> bool:
    """Whether a media type names JSON: `application/json` or a `+json` structured syntax
    suffix (RFC 6839), compared without its parameters and case-insensitively."""
    essence = value.split(";", 1)[0].strip().lower()
    return essence == "application/json" or (
        "/" in essence and essence.endswith("+json"))
