"""The garbage collector of a serving process, tuned for thousands of open subscriptions.

Every open subscription holds a couple of hundred objects (its connection, request, task
and coroutines), so a process with thousands of readers holds a million or more, and with
CPython's default thresholds delivering one record to them (a few objects allocated, and
freed, per reader) runs collections that walk the whole heap (figures: ADR 0048).

So a serving process:
- freezes what start-up built (modules, the app, its settings), which lives as long as
  the process: no collection walks it again;
- collects the young generation every `YOUNG_THRESHOLD` allocations instead of 700.
  Reference counting frees almost everything at once anyway; the collector is only for
  cycles.
"""

from __future__ import annotations

import gc

YOUNG_THRESHOLD = 50_000


def tune_for_serving() -> None:
    """Call once, when the app is built and before it serves."""
    gc.collect()
    gc.freeze()
    _, middle, old = gc.get_threshold()
    gc.set_threshold(YOUNG_THRESHOLD, middle, old)
