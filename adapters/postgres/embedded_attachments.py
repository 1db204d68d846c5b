"""Which live processes use the embedded cluster under one data directory (ADR 0052).

Rules:
- every handle (`start_embedded`) is an entry of `<data_dir>/pgdata.attached`: the
  process id, that process's start time (so a reused pid is not mistaken for it) and a
  handle id (one process may hold several handles);
- the file is read and written only under `<data_dir>/pgdata.lock` (`flock`), held by
  the caller across attaching and starting, or across detaching and stopping: a process
  that attaches while another detaches sees the cluster either running and counted, or
  stopped and its to start;
- an entry whose process is gone (killed, crashed) or is another process by now is
  dropped whenever the file is read: a dead process keeps no cluster up and stops none;
- a process that cannot be inspected (another user's) counts as live: at worst the
  cluster outlives it, never does it stop under it.
"""

from __future__ import annotations

import fcntl
import json
import os
import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TypedDict

import psutil

ATTACHED_FILE = "pgdata.attached"
LOCK_FILE = "pgdata.lock"
FILE_MODE = 0o600
_SAME_START_SECONDS = 0.05


class Entry(TypedDict):
    pid: int
    started: float
    handle: str


class Attachments:
    """The entries of one data directory; `add` and `remove` only inside `locked()`."""

    def __init__(self, data_dir: Path) -> None:
        self._path = data_dir / ATTACHED_FILE
        self._lock_path = data_dir / LOCK_FILE

    @contextmanager
    def locked(self) -> Iterator[None]:
        descriptor = os.open(self._lock_path, os.O_RDWR | os.O_CREAT, FILE_MODE)
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX)  # released by close, or by our death
            yield
        finally:
            os.close(descriptor)

    def add(self) -> str:
        """Count this process in; the new handle's id."""
        handle = secrets.token_hex(8)
        me = psutil.Process()
        self._write([*self._live(), Entry(pid=me.pid, started=me.create_time(),
                                          handle=handle)])
        return handle

    def remove(self, handle: str) -> int:
        """Count `handle` out; how many live handles remain (of any process)."""
        remaining = [entry for entry in self._live() if entry["handle"] != handle]
        self._write(remaining)
        return len(remaining)

    def _live(self) -> list[Entry]:
        try:
            entries: list[Entry] = json.loads(self._path.read_text())
        except FileNotFoundError:
            return []
        except ValueError:  # never torn (written by rename): edited by hand; trust none
            return []
        return [entry for entry in entries if _is_alive(entry)]

    def _write(self, entries: list[Entry]) -> None:
        staged = self._path.with_name(f".{ATTACHED_FILE}.{os.getpid()}")
        descriptor = os.open(staged, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, FILE_MODE)
        with os.fdopen(descriptor, "w") as handle:
            json.dump(entries, handle)
        os.replace(staged, self._path)


def _is_alive(entry: Entry) -> bool:
    try:
        process = psutil.Process(entry["pid"])
        if process.status() == psutil.STATUS_ZOMBIE:
            return False
        started: float = process.create_time()
        return abs(started - entry["started"]) < _SAME_START_SECONDS
    except psutil.NoSuchProcess:
        return False
    except psutil.AccessDenied:
        return True
