"""`runnel tail`: follow a stream in the terminal through the client SDK.

Each record goes to stdout as one line, `<sequence>\\t<payload as JSON>` (binary
records as `{"content_type", "data"}` in base64, object records as their
reference); live chunks (with `--live`) as `live\\t<chunk as JSON>`. A status line
on stderr shows records/s, the last sequence and the reconnects: redrawn in place
on a terminal, at most once a second otherwise, and once more at the end. The
command exits 0 when the stream is closed and every record was shown, and quietly
with 0 when its reader goes away (`runnel tail … | head`).
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any, TextIO

from runnel_client import FollowState, LiveEvent, Record, RunnelClient, RunnelError

STATUS_EVERY_SECONDS = 1.0


def record_line(record: Record) -> str:
    body: Any = record.payload
    if record.object is not None:
        body = {"object": record.object}
    elif record.data is not None:
        body = {"content_type": record.content_type, "data": record.data}
    return f"{record.sequence}\t{json.dumps(body, ensure_ascii=False)}"


class Status:
    """The status line: records/s since the start, last sequence, reconnects."""

    def __init__(self, state: FollowState, out: TextIO) -> None:
        self._state = state
        self._out = out
        self._tty = out.isatty()
        self._started = time.monotonic()
        self._shown_at = 0.0
        self.records = 0

    def line(self) -> str:
        elapsed = max(time.monotonic() - self._started, 1e-3)
        return (f"{self.records / elapsed:.1f} records/s  last sequence {self._state.cursor}"
                f"  reconnects {self._state.reconnects}")

    def update(self, final: bool = False) -> None:
        now = time.monotonic()
        if not final and now - self._shown_at < (0.1 if self._tty else STATUS_EVERY_SECONDS):
            return
        self._shown_at = now
        if self._tty:
            self._out.write("\r\033[K" + self.line() + ("\n" if final else ""))
        else:
            self._out.write(self.line() + "\n")
        self._out.flush()


def tail(url: str, token: str, run_id: str, stream_id: str, after: int, live: bool,
         out: TextIO | None = None, err: TextIO | None = None) -> int:
    out = out or sys.stdout
    err = err or sys.stderr
    state = FollowState(after)
    status = Status(state, err)
    try:
        with RunnelClient(url, token) as client:
            for item in client.follow(run_id, stream_id, after, live=live, state=state):
                if isinstance(item, LiveEvent):
                    out.write(f"live\t{json.dumps(item.data, ensure_ascii=False)}\n")
                else:
                    out.write(record_line(item) + "\n")
                    status.records += 1
                out.flush()
                status.update()
    except RunnelError as error:
        status.update(final=True)
        err.write(f"runnel tail: {error}\n")
        return 1
    except KeyboardInterrupt:
        status.update(final=True)
        return 130
    except BrokenPipeError:  # the reader went away (`runnel tail … | head`): a normal end
        _silence(out)
        return 0
    status.update(final=True)
    return 0


def _silence(out: TextIO) -> None:
    """Point a closed stdout at /dev/null, so that the interpreter's flush at exit does not
    fail a second time with a traceback."""
    if out is not sys.stdout:
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
