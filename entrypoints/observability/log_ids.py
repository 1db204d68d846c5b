"""Log lines never name a run or a stream: a stable keyed hash stands in for each id.

Rules:
- a stream's `log_region` pins where lines naming it may be written. From a line
  alone (an access-log path, an error's repr) a node cannot tell which stream's
  pin applies without a lookup on the logging path. So every node writes the
  hash, inside the log region too, and lines from every region correlate on the
  same value;
- the hash is HMAC-SHA256 keyed with a secret derived from the node's JWT secret
  (the same on every node of a deployment), cut to 16 hex digits. It is stable,
  and it cannot be reversed or recomputed without the secret.
  `runnel log-id RUN [STREAM]` prints it for an operator;
- the filter rewrites a record's final message and drops its arguments (the
  access log's fields are scrubbed one by one: its formatter needs them). It sits
  on every handler, so no logger can get past it.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import re

_ID = r"[A-Za-z0-9._:-]{1,128}"
_PATH = re.compile(rf"/(runs|streams)/({_ID})")
_FIELD = re.compile(rf"\b(run_id|stream_id)=(['\"])({_ID})\2")


class LogIds:
    """Pseudonyms for run and stream ids, keyed by the deployment's secret."""

    def __init__(self, secret: str) -> None:
        self._key = hmac.new(secret.encode(), b"runnel log ids", hashlib.sha256).digest()

    def pseudonym(self, identifier: str) -> str:
        digest = hmac.new(self._key, identifier.encode(), hashlib.sha256).hexdigest()
        return f"h:{digest[:16]}"

    def scrub(self, text: str) -> str:
        text = _PATH.sub(lambda m: f"/{m.group(1)}/{self.pseudonym(m.group(2))}", text)
        return _FIELD.sub(lambda m: f"{m.group(1)}={m.group(2)}{self.pseudonym(m.group(3))}"
                          f"{m.group(2)}", text)


class ScrubIds(logging.Filter):
    """A handler filter: replaces run and stream ids in the message (and in an exception's
    text, once formatted) with their pseudonyms."""

    def __init__(self, ids: LogIds) -> None:
        super().__init__()
        self._ids = ids

    def filter(self, record: logging.LogRecord) -> bool:
        if record.name == "uvicorn.access" and isinstance(record.args, tuple):
            # Its formatter takes the fields apart again: scrub them one by one.
            record.args = tuple(self._ids.scrub(arg) if isinstance(arg, str) else arg
                                for arg in record.args)
        else:
            record.msg = self._ids.scrub(record.getMessage())
            record.args = None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = self._ids.scrub(record.exc_text)
        return True
