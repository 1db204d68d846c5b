"""`runnel serve --processes N`: N API processes on one port (ADR 0045).

Rules:
- the parent's socket (bound by `runnel serve` before anything boots) is shared by N
  children, spawned, not forked (no event loop, pool or thread crosses over); each child
  is a whole node (its own loop, pool and LISTEN connection), as several nodes share one
  Postgres, and accepts from the shared socket, the kernel handing each connection to one;
- only child 0 runs the background workers (when the node runs any), the others are API
  only; child 0 alone prints the banner;
- every child dies with the parent (`PR_SET_PDEATHSIG`): a `kill -9` of `runnel serve`
  leaves nothing serving on the port;
- SIGTERM or SIGINT to the parent reaches every child, which drains as a single process
  does (ADR 0029); when a child exits on its own the parent stops the others and exits with
  its status, for the supervisor (systemd, Kubernetes) to restart the node whole;
- connection caps, the SSE pool and `/metrics` are per process.
"""

from __future__ import annotations

import ctypes
import multiprocessing
import os
import signal
import socket
from dataclasses import dataclass
from multiprocessing.connection import wait
from types import FrameType

PR_SET_PDEATHSIG = 1
BACKLOG = 2048


@dataclass(frozen=True)
class ServeArgs:
    """What each child needs to build its server (picklable)."""

    host: str
    access_log: bool
    workers: bool
    stop_seconds: float
    """How long a child may take to drain before the parent kills it."""


def run(args: ServeArgs, listener: socket.socket, count: int) -> int:
    """Serve with `count` children on the bound `listener` until stopped; the exit status."""
    listener.listen(BACKLOG)
    context = multiprocessing.get_context("spawn")
    children = [context.Process(target=_child, args=(listener, index, args),
                                name=f"runnel-serve-{index}") for index in range(count)]
    for child in children:
        child.start()
    listener.close()  # the children hold it now
    stopping = False

    def stop(signum: int, _: FrameType | None) -> None:
        nonlocal stopping
        stopping = True
        for child in children:
            if child.is_alive():
                child.terminate()  # SIGTERM: each drains (ADR 0029)

    previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        first = wait([child.sentinel for child in children])[0]
        if not stopping:
            stop(signal.SIGTERM, None)
        for child in children:
            child.join(args.stop_seconds)
            if child.is_alive():
                child.kill()
                child.join()
        ended = next(child for child in children if child.sentinel == first)
        return 0 if stopping else (ended.exitcode or 1)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _child(listener: socket.socket, index: int, args: ServeArgs) -> None:
    _die_with_parent()
    os.setpgrp()  # a terminal's ^C reaches the parent only, which sends one SIGTERM
    from entrypoints.commands.serve import build_server
    from entrypoints.composition.settings import Settings

    settings = Settings(workers=args.workers and index == 0)
    server = build_server(settings, args.host, listener.getsockname()[1], args.access_log,
                          banner=index == 0)
    server.run(sockets=[listener])


def _die_with_parent() -> None:
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    except OSError:  # not Linux: the parent's SIGTERM still reaches the children
        pass
