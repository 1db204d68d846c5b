"""The OpenTelemetry side of `tracing.py`: imported only when tracing is on (the `otel` extra).

Rules:
- one global tracer provider, its resource from the standard variables
  (`OTEL_SERVICE_NAME`, else `runnel`), its exporter from `OTEL_TRACES_EXPORTER`;
- every string attribute a span starts with passes the log scrubber: the ASGI span's
  `url.path`, `http.target` and query name runs, streams and tokens otherwise;
- the ASGI server span is named by the method alone until the route is known (never
  by the raw path), and makes no child span per ASGI message (an event stream sends
  thousands).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import Any

from opentelemetry import trace
from opentelemetry.instrumentation.asgi import OpenTelemetryMiddleware
from opentelemetry.instrumentation.asyncpg import AsyncPGInstrumentor
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter, SpanExporter


class ScrubAttributes(SpanProcessor):
    """Rewrites a starting span's string attributes as a log line would be."""

    def __init__(self, scrub: Callable[[str], str]) -> None:
        self._scrub = scrub

    def on_start(self, span: Span, parent_context: Any = None) -> None:
        for key, value in dict(span.attributes or {}).items():
            if isinstance(value, str) and (clean := self._scrub(value)) != value:
                span.set_attribute(key, clean)

    def on_end(self, span: ReadableSpan) -> None:
        pass


def _exporter() -> SpanExporter | None:
    kind = os.environ.get("OTEL_TRACES_EXPORTER", "otlp").strip().lower()
    if kind == "none":
        return None
    if kind == "console":
        return ConsoleSpanExporter(out=sys.stdout,
                                   formatter=lambda span: span.to_json(indent=None) + "\n")
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    return OTLPSpanExporter()


def install(scrub: Callable[[str], str]) -> None:
    resource = Resource.create({"service.name": os.environ.get("OTEL_SERVICE_NAME", "runnel")})
    provider = TracerProvider(resource=resource)
    provider.add_span_processor(ScrubAttributes(scrub))
    exporter = _exporter()
    if exporter is not None:
        provider.add_span_processor(BatchSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    AsyncPGInstrumentor().instrument(tracer_provider=provider)  # type: ignore[no-untyped-call]


def _span_details(scope: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    return str(scope.get("method") or "HTTP"), {}


def asgi_middleware(app: Any) -> Any:
    return OpenTelemetryMiddleware(app, default_span_details=_span_details,
                                   exclude_spans=["receive", "send"])
