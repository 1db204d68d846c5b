"""One logging setup for every `runnel` process: serve, worker, migrate, fence, revoke.

Rules:
- one handler, on the root logger, writing to stderr (stdout carries the banner and
  the worker's ready line only). Every logger reaches it: uvicorn's, ours, the
  adapters' (`adapters.postgres.*`) and asyncpg's; Python warnings too;
- the handler's filters redact tokens, then pseudonymise run and stream ids, on
  every record before it is formatted, so no logger can get past them; in JSON, an
  uncaught exception (also in a thread) is logged (CRITICAL), and an ignored one (an exit
  hook's) is logged (ERROR), rather than printed;
- `RUNNEL_LOG_LEVEL` (default INFO) is the root's level; `RUNNEL_LOG_FORMAT` picks
  `text` (timestamped lines) or `json` (one object per line, `log_format.py`); what is
  logged while the configuration is being built is held, then written by that handler;
- `runnel serve` hands the same configuration to uvicorn, whose own loggers then
  propagate to the root; `--access-log` turns `uvicorn.access` on; uvicorn's start-up
  lines (process started, application startup) are dropped: the banner, printed once
  the server listens, says it has started.
"""

from __future__ import annotations

import logging
import logging.config
import sys
import threading
from types import TracebackType
from typing import Any

from entrypoints.auth.token_redaction import RedactTokens
from entrypoints.composition.settings import Settings
from entrypoints.observability.log_format import JsonFormatter, TextFormatter
from entrypoints.observability.log_ids import LogIds, ScrubIds

_UVICORN_LOGGERS = ("uvicorn", "uvicorn.error", "uvicorn.access")
UVICORN_START_UP = frozenset({"Started server process [%d]", "Waiting for application startup.",
                              "Application startup complete."})


class QuietStartUp(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return record.msg not in UVICORN_START_UP


def logging_config(settings: Settings) -> dict[str, Any]:
    """A `logging.config.dictConfig` for this process (uvicorn takes it as `log_config`)."""
    formatter = JsonFormatter if settings.log_format == "json" else TextFormatter
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "filters": {"redact_tokens": {"()": RedactTokens},
                    "quiet_start_up": {"()": QuietStartUp},
                    "scrub_ids": {"()": ScrubIds,
                                  "ids": LogIds(settings.resolved_jwt_secret())}},
        "formatters": {"runnel": {"()": formatter}},
        "handlers": {"stderr": {"class": "logging.StreamHandler", "formatter": "runnel",
                                "filters": ["redact_tokens", "scrub_ids"],
                                "stream": "ext://sys.stderr"}},
        "root": {"handlers": ["stderr"], "level": settings.log_level},
        # uvicorn's loggers lose the handlers its default config gives them and propagate.
        "loggers": {name: {"handlers": [], "propagate": True, "level": settings.log_level,
                           "filters": ["quiet_start_up"]}
                    for name in _UVICORN_LOGGERS},
    }


def configure_logging(settings: Settings) -> None:
    early = _Held()  # what resolving the settings logs (a tightened data dir) waits for
    logging.getLogger().addHandler(early)
    try:
        config = logging_config(settings)
    finally:
        logging.getLogger().removeHandler(early)
    logging.config.dictConfig(config)
    for record in early.records:
        logging.getLogger(record.name).handle(record)
    logging.captureWarnings(True)
    if settings.log_format == "json":  # a crash is one JSON line too, scrubbed like the rest
        sys.excepthook = _log_uncaught
        threading.excepthook = _log_thread_crash
        sys.unraisablehook = _log_unraisable  # an exit hook's error, a failing __del__


class _Held(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


def _log_uncaught(kind: type[BaseException], error: BaseException,
                  trace: TracebackType | None) -> None:
    logging.getLogger("runnel").critical("uncaught %s", kind.__name__,
                                         exc_info=(kind, error, trace))


def _log_thread_crash(crash: threading.ExceptHookArgs) -> None:
    if crash.exc_value is not None:
        logging.getLogger("runnel").critical(
            "uncaught %s in thread %s", crash.exc_type.__name__,
            crash.thread.name if crash.thread is not None else "?",
            exc_info=(crash.exc_type, crash.exc_value, crash.exc_traceback))


def _log_unraisable(unraisable: Any) -> None:
    error = unraisable.exc_value
    logging.getLogger("runnel").error(
        "%s: %s", unraisable.err_msg or "exception ignored", unraisable.object,
        exc_info=(type(error), error, unraisable.exc_traceback) if error else None)
