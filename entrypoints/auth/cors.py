"""Cross-origin access (`RUNNEL_CORS_ORIGINS`, ADR 0062): the one policy of the native API
and the Durable Streams facade alike, applied by the request layer (`RequestIds`).

Rules:
- the origins are listed one by one, as `entrypoints.composition.origins` parses them
  (as browsers send them; `*` and `null` are refused);
- a preflight (`OPTIONS` with `Origin` and `Access-Control-Request-Method`) is answered
  by the layer itself, 204, whatever the path: for a listed origin with the allowed
  methods and request headers, `Max-Age` and `Vary`; for any other origin with `Vary`
  only, so the browser refuses the request. It never reaches a route;
- every other response to a listed origin names that origin (never `*`) and exposes the
  headers a client reads (`Retry-After`, the request id, the offsets and cursors);
  to another origin it carries no `Access-Control-*` header. With any origin listed,
  every response says `Vary: Origin`, so a cache never hands one origin's answer to
  another;
- never `Access-Control-Allow-Credentials`: Runnel takes bearer tokens, no cookie ever
  authenticates a cross-origin request;
- a response that already names its origin policy (`runnel.js`, a public module for any
  page) keeps it.
"""

from __future__ import annotations

from collections.abc import Iterable

from entrypoints.composition.origins import parse_origins

METHODS = "GET, HEAD, POST, PUT, DELETE"
REQUEST_HEADERS = (
    "authorization, content-type, last-event-id, x-request-id, traceparent, tracestate, "
    "if-none-match, stream-seq, stream-ttl, stream-expires-at, stream-closed, producer-id, "
    "producer-epoch, producer-seq, stream-forked-from, stream-fork-offset, "
    "stream-fork-sub-offset, runnel-definition")
"""What a browser client may send: the native API's and the facade's (ADR 0041)."""
EXPOSED_HEADERS = (
    "retry-after, x-request-id, www-authenticate, location, etag, stream-next-offset, "
    "stream-cursor, stream-up-to-date, stream-closed, producer-epoch, producer-seq, "
    "producer-expected-seq, producer-received-seq, stream-ttl, stream-expires-at, "
    "stream-sse-data-encoding, runnel-run-id, x-content-sha256")
"""What a browser client may read besides the CORS-safelisted response headers."""
_ORIGIN = b"origin"
_REQUEST_METHOD = b"access-control-request-method"
_ALLOW_ORIGIN = b"access-control-allow-origin"
_VARY = b"vary"

Headers = list[tuple[bytes, bytes]]


class CrossOrigin:
    """The policy for one node: `preflight` answers a preflight, `headers` completes the
    headers of any other response."""

    def __init__(self, origins: Iterable[str], max_age_seconds: int) -> None:
        self._origins = frozenset(origin.encode() for origin in parse_origins(origins))
        self._max_age = str(max_age_seconds).encode()

    @property
    def enabled(self) -> bool:
        return bool(self._origins)

    def preflight(self, method: str, request: Iterable[tuple[bytes, bytes]]) -> Headers | None:
        """The headers of the 204 that answers this request, if it is a preflight."""
        if method != "OPTIONS":
            return None
        found = _find(request, (_ORIGIN, _REQUEST_METHOD))
        origin = found.get(_ORIGIN)
        if origin is None or _REQUEST_METHOD not in found:
            return None
        vary = (_VARY, b"Origin, Access-Control-Request-Method, "
                       b"Access-Control-Request-Headers")
        if origin not in self._origins:
            return [vary]
        return [(_ALLOW_ORIGIN, origin), (b"access-control-allow-methods", METHODS.encode()),
                (b"access-control-allow-headers", REQUEST_HEADERS.encode()),
                (b"access-control-max-age", self._max_age), vary]

    def headers(self, request: Iterable[tuple[bytes, bytes]], response: Headers) -> Headers:
        """`response` with the CORS headers this request's origin gets."""
        if not self._origins:
            return response
        origin = _find(request, (_ORIGIN,)).get(_ORIGIN)
        own = any(name.lower() == _ALLOW_ORIGIN for name, _ in response)
        merged = _with_vary(response)
        if origin is not None and origin in self._origins and not own:
            merged += [(_ALLOW_ORIGIN, origin),
                       (b"access-control-expose-headers", EXPOSED_HEADERS.encode())]
        return merged


def _find(headers: Iterable[tuple[bytes, bytes]], names: tuple[bytes, ...]) -> dict[bytes, bytes]:
    found: dict[bytes, bytes] = {}
    for name, value in headers:
        lowered = name.lower()
        if lowered in names and lowered not in found:
            found[lowered] = bytes(value)
    return found


def _with_vary(headers: Headers) -> Headers:
    """`Vary` names `Origin`, added to the one the response has, if any."""
    out: Headers = []
    varied = False
    for name, value in headers:
        if name.lower() == _VARY:
            varied = True
            if b"origin" not in value.lower() and value.strip() != b"*":
                value = value + b", Origin"
        out.append((name, value))
    if not varied:
        out.append((_VARY, b"Origin"))
    return out
