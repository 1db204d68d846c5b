"""The OpenTelemetry side of `tracing.py`: imported only when tracing is on (the `otel` extra).

Rules:
- one global tracer provider, its resource from the standard variables
  (`OTEL_SERVICE_NAME`, else `runnel`), its exporter from `OTEL_TRACES_EXPORTER`;
- the ASGI instrumentation reads the URL from the scope (`http.target`, `http.url`,
  `url.path`, `url.query`) and writes it into the server span more than once: it is
  handed a copy of the scope whose path and query have passed the log scrubber, and
  the application gets the real scope back underneath it. Every other string
  attribute a span starts with passes the same scrubber;
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


_REAL_SCOPE = "runnel.real_scope"


class _ScrubbedScope:
    """Outside the instrumentation: it sees the path and query as a log line would."""

    def __init__(self, app: Any, scrub: Callable[[str], str]) -> None:
        self.app = app
        self._scrub = scrub

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path = self._scrub(scope.get("path", ""))
        query = self._scrub(scope.get("query_string", b"").decode("latin-1"))
        seen = {**scope, "path": path, "raw_path": path.encode("latin-1", "replace"),
                "query_string": query.encode("latin-1", "replace"), _REAL_SCOPE: scope}
        await self.app(seen, receive, send)


class _RealScope:
    """Inside the instrumentation: the application gets the scope the server made."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        await self.app(scope.get(_REAL_SCOPE, scope), receive, send)


def asgi_middleware(app: Any, scrub: Callable[[str], str],
                    tracer_provider: TracerProvider | None = None) -> Any:
    instrumented = OpenTelemetryMiddleware(_RealScope(app), default_span_details=_span_details,
                                           exclude_spans=["receive", "send"],
                                           tracer_provider=tracer_provider)
    return _ScrubbedScope(instrumented, scrub)
