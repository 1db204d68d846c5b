"""Origins as `RUNNEL_CORS_ORIGINS` lists them (ADR 0062), parsed where the settings are
read, before any app is built.

Rules:
- an origin is `http(s)://host[:port]`, ASCII (an IDN host in its `xn--` form), without
  path, query, fragment or user info; it is kept lower-case and without its scheme's
  default port, as browsers send it;
- `*` and `null` are refused: the list is explicit.
"""

from __future__ import annotations

from collections.abc import Iterable
from urllib.parse import urlsplit

DEFAULT_PORTS = {"http": 80, "https": 443}


def parse_origins(values: Iterable[str]) -> tuple[str, ...]:
    """Each origin in the form browsers send, or `ValueError` naming the first that is not
    one."""
    return tuple(dict.fromkeys(_origin(value.strip()) for value in values if value.strip()))


def _origin(text: str) -> str:
    if text in ("*", "null"):
        raise ValueError(f"{text!r} is not allowed: list each origin, e.g. "
                         "https://app.example.com")
    problem = f"{text!r} is not an origin: scheme://host[:port], e.g. https://app.example.com"
    if not text.isascii():
        raise ValueError(problem + " (an international host in its xn-- form)")
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError:
        raise ValueError(problem) from None
    scheme, host = parts.scheme.lower(), (parts.hostname or "")
    if (scheme not in DEFAULT_PORTS or not host or parts.username is not None
            or parts.path or parts.query or parts.fragment or text.endswith(("?", "#"))):
        raise ValueError(problem)
    netloc = f"[{host}]" if ":" in host else host
    if port is not None and port != DEFAULT_PORTS[scheme]:
        netloc += f":{port}"
    return f"{scheme}://{netloc}"
