"""Credentials out of text: what stands in for a token in a log line or a problem detail.

Rules:
- the value of a `access_token=` or `token=` parameter (a query string, a form) is
  replaced by `[redacted]`, whatever it looks like;
- so is anything shaped like a JWT (three base64url parts, the first two JSON
  objects, so starting `eyJ`), wherever it stands: an `Authorization` header
  quoted in an error, a token pasted into a run id;
- nothing else is touched, so a line stays readable and its run and stream ids
  can still be pseudonymised (`log_ids.py`).
"""

from __future__ import annotations

import logging
import re

REDACTED = "[redacted]"
_PARAMETER = re.compile(r"(?i)\b((?:access_)?token=)[^&\s\"'#]*")
_JWT = re.compile(r"eyJ[A-Za-z0-9_-]*\.eyJ[A-Za-z0-9_-]*\.[A-Za-z0-9_-]*")


def redact_tokens(text: str) -> str:
    return _PARAMETER.sub(lambda m: m.group(1) + REDACTED, _JWT.sub(REDACTED, text))


class RedactTokens(logging.Filter):
    """A handler filter: no record leaves with a token in its message, its arguments or
    its exception text."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.name == "uvicorn.access" and isinstance(record.args, tuple):
            # Its formatter takes the fields apart again: redact them one by one.
            record.args = tuple(redact_tokens(arg) if isinstance(arg, str) else arg
                                for arg in record.args)
        else:
            record.msg = redact_tokens(record.getMessage())
            record.args = None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact_tokens(record.exc_text)
        return True
