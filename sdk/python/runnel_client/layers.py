"""What a reader of both layers does with them (ADR 0019).

A subscription with `live=True` carries two layers: durable records (the answer,
every one, in order) and best-effort live chunks (a preview, possibly incomplete,
not ordered against the records). A producer ties them together by step:

- live chunks of a step carry `source` = the step's name (`LivePublisher(source=…)`
  or `publish_live(source=…)`), and `attempt` (from 1) when the step can be retried;
- the record holding the step's stored text carries `idempotency_key` = that same
  name (`Record.step`).

The reader's rules, applied by `follow()` to what it yields:

1. Once the record of step S arrived, every later live chunk of S is dropped, even
   one of a higher attempt: the stored text is the answer.
2. A live chunk of S with an attempt below the highest attempt seen for S is
   dropped; the first chunk of a higher attempt comes with `supersedes=True`,
   which tells the reader to drop the earlier attempt's text.

What was already shown is the reader's to remove: a `Record` whose `step` is S
means "remove S's live text", `supersedes` means "clear S's live text first".
`LiveText` does that bookkeeping for a reader that shows the live text.
Chunks without a `source` name no step and pass untouched (a `best_effort`
stream's records arrive that way).
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

from runnel_client.wire import LiveEvent, Record

MAX_TRACKED_STEPS = 4096
"""Steps a follower remembers (settled steps and attempts): the least recently seen is
forgotten first, so a straggler of a step that many steps ago settled could show again."""


class Steps:
    """The two rules above, over the frames of one follow (kept across reconnects)."""

    def __init__(self, limit: int = MAX_TRACKED_STEPS) -> None:
        self._limit = limit
        self._settled: OrderedDict[str, None] = OrderedDict()
        self._attempts: OrderedDict[str, int] = OrderedDict()
        self.dropped = 0

    def settle(self, record: Record) -> None:
        """`record` arrived: its step takes no more live chunks."""
        step = record.step
        if step is None:
            return
        self._attempts.pop(step, None)
        self._remember(self._settled, step, None)

    def admit(self, frame: Any) -> LiveEvent | None:
        """The live chunk as the caller sees it, or None when a rule drops it."""
        event = LiveEvent(frame)
        source, attempt = event.source, event.attempt
        if source is None:
            return event
        if source in self._settled:
            self.dropped += 1
            return None
        if attempt is None:
            return event
        highest = self._attempts.get(source)
        if highest is not None and attempt < highest:
            self.dropped += 1
            return None
        self._remember(self._attempts, source, attempt)
        if highest is not None and attempt > highest:
            return LiveEvent(frame, supersedes=True)
        return event

    def _remember(self, table: OrderedDict[str, Any], step: str, value: Any) -> None:
        table[step] = value
        table.move_to_end(step)
        while len(table) > self._limit:
            table.popitem(last=False)


class LiveText:
    """The live text a reader of both layers shows beside its records: for each step
    not settled yet, the chunks of its current attempt, in arrival order. Feed it every
    item `follow(live=True)` yields; a step's record removes the step's chunks."""

    def __init__(self) -> None:
        self._chunks: dict[str, list[Any]] = {}

    def apply(self, item: Record | LiveEvent) -> None:
        if isinstance(item, Record):
            if item.step is not None:
                self._chunks.pop(item.step, None)
            return
        source = item.source
        if source is None:
            return
        if item.supersedes:
            self._chunks[source] = []
        self._chunks.setdefault(source, []).append(item.chunk)

    def chunks(self, source: str | None) -> list[Any]:
        """The chunks shown for `source` (none once its record arrived)."""
        return list(self._chunks.get(source, [])) if source is not None else []

    def sources(self) -> list[str]:
        """The steps with live text shown, in the order they started."""
        return list(self._chunks)
