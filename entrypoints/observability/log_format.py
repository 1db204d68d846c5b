"""How a log record is written: a text line with a timestamp, or one JSON object per line.

Rules:
- a record reaches a formatter only after the handler's filters: its message,
  arguments and exception text carry no token (`token_redaction.py`) and no run or
  stream id, only pseudonyms (`log_ids.py`). The formatter adds nothing taken from
  a request's path, body or headers except the validated request id;
- JSON lines have `ts` (UTC, ISO 8601, milliseconds), `level`, `logger`, `message`,
  `exc` (the traceback, when there is one) and, for a line written while a request is
  handled, `request_id`, `tenant`, `route` (the path template), and once the response
  has started `status` and `duration_ms` (to the response headers). `trace_id` and
  `span_id` are there when tracing is on and a span is current (`tracing.py`);
- a text line is `ts LEVEL logger: message`, followed by `request_id=…` in a request.
"""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime
from typing import Any

from entrypoints.observability import tracing
from entrypoints.observability.request_context import current_request


def timestamp(record: logging.LogRecord) -> str:
    moment = datetime.fromtimestamp(record.created, UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _exception_text(record: logging.LogRecord) -> str | None:
    # The filters have formatted and scrubbed it into `exc_text` already.
    return record.exc_text or None


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {"ts": timestamp(record), "level": record.levelname,
                                "logger": record.name, "message": record.getMessage()}
        exc = _exception_text(record)
        if exc is not None:
            line["exc"] = exc
        request = current_request()
        if request is not None:
            line.update(request_id=request.request_id, tenant=request.tenant,
                        route=request.route)
            if request.status is not None:
                line.update(status=request.status, duration_ms=request.duration_ms)
        trace = tracing.current_trace()
        if trace is not None:
            line["trace_id"], line["span_id"] = trace
        return json.dumps(line, ensure_ascii=False, default=str)


class TextFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        text = f"{timestamp(record)} {record.levelname} {record.name}: {record.getMessage()}"
        request = current_request()
        if request is not None:
            text += f" request_id={request.request_id}"
        exc = _exception_text(record)
        return f"{text}\n{exc}" if exc is not None else text
