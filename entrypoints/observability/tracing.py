"""Optional OpenTelemetry tracing: the `otel` extra, off unless asked for.

Rules:
- on with `RUNNEL_OTEL=true`, or when a standard `OTEL_TRACES_EXPORTER` or
  `OTEL_EXPORTER_OTLP[_TRACES]_ENDPOINT` variable is set (and `OTEL_SDK_DISABLED` is
  not `true`). Nothing of OpenTelemetry is imported otherwise;
- `RUNNEL_OTEL=true` without the extra installed is a configuration error; the
  standard variables alone, without it, give one warning and no tracing;
- the SDK reads the standard variables itself: `OTEL_SERVICE_NAME` (default
  `runnel`), `OTEL_TRACES_SAMPLER`, `OTEL_PROPAGATORS` (default W3C `traceparent`),
  `OTEL_EXPORTER_OTLP_*`. `OTEL_TRACES_EXPORTER` is `otlp` (default, over HTTP),
  `console` (one JSON line per span on stdout) or `none`;
- the HTTP server span wraps every request (ASGI instrumentation), honours an incoming
  `traceparent`, and is named by method and route template; asyncpg calls are child
  spans. Span attributes pass the same token redaction and id pseudonyms as log lines,
  so a trace names no run or stream either;
- log lines written inside a span carry its `trace_id` and `span_id` (`log_format.py`).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from typing import cast

from litestar.types import ASGIApp

from entrypoints.auth.token_redaction import redact_tokens
from entrypoints.composition.settings import ConfigurationError, Settings
from entrypoints.observability.log_ids import LogIds

log = logging.getLogger("runnel.tracing")

_ENABLED = False
_SCRUB: _Scrubber | None = None
_STANDARD = ("OTEL_TRACES_EXPORTER", "OTEL_EXPORTER_OTLP_ENDPOINT",
             "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
EXTRA_HINT = "install the `otel` extra: pip install 'runnel[otel]'"


def wanted(settings: Settings, environ: Mapping[str, str] = os.environ) -> bool:
    if environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    return settings.otel or any(environ.get(name) for name in _STANDARD)


def current_trace() -> tuple[str, str] | None:
    """The current span's trace and span id (hex), or None (tracing off, or no span)."""
    if not _ENABLED:
        return None
    from opentelemetry import trace

    context = trace.get_current_span().get_span_context()
    if not context.is_valid:
        return None
    return f"{context.trace_id:032x}", f"{context.span_id:016x}"


def name_server_span(method: str, route: str | None) -> None:
    """Once the route is known (at the response's start): the span's name and route."""
    if not _ENABLED or route is None:
        return
    from opentelemetry import trace

    span = trace.get_current_span()
    if span.is_recording():
        span.update_name(f"{method} {route}")
        span.set_attribute("http.route", route)


def start_tracing(settings: Settings) -> bool:
    """Install the tracer provider and the asyncpg instrumentation, if tracing is wanted;
    True when it is on."""
    global _ENABLED, _SCRUB
    if _ENABLED or not wanted(settings):
        return _ENABLED
    try:
        from entrypoints.observability import tracing_sdk
    except ImportError as missing:
        if settings.otel:
            raise ConfigurationError(f"RUNNEL_OTEL=true but {missing.name} is missing: "
                                     f"{EXTRA_HINT}") from None
        log.warning("OTEL_* variables are set but OpenTelemetry is not installed (%s): "
                    "no tracing", EXTRA_HINT)
        return False
    _SCRUB = _Scrubber(LogIds(settings.resolved_jwt_secret()))
    tracing_sdk.install(_SCRUB)
    _ENABLED = True
    log.info("tracing on (OpenTelemetry, exporter %s)",
             os.environ.get("OTEL_TRACES_EXPORTER", "otlp"))
    return True


def traced(app: ASGIApp) -> ASGIApp:
    """The ASGI app inside a server span per request (a no-op while tracing is off)."""
    if not _ENABLED or _SCRUB is None:
        return app
    from entrypoints.observability import tracing_sdk

    return cast(ASGIApp, tracing_sdk.asgi_middleware(app, _SCRUB))


class _Scrubber:
    """What a span attribute may say: what a log line may say."""

    def __init__(self, ids: LogIds) -> None:
        self._ids = ids

    def __call__(self, value: str) -> str:
        return self._ids.scrub(redact_tokens(value))
