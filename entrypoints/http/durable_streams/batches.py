"""A facade reader's follow as protocol batches (ADR 0071): the records of one Runnel follow
(`OpenFollow`, held for the whole connection), cut where the reader is caught up.

Rules:
- a batch ends where the reader reaches the head the follow knows (`upToDate`), or at
  `PAGE` records; a batch that reaches the head of a closed stream waits for the follow's
  end, so that the last records and the closure leave together;
- `Tick`: the follow's keepalive; `Ended`: the follow ended otherwise than closed (token
  revoked or expired, node draining, retention overtook the reader): whatever was not yet
  handed over is dropped, and the reader resumes from the last batch's offset;
- live chunks are no part of the protocol: skipped.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from dataclasses import dataclass

from application.follow_frames import EndFrame, KeepaliveFrame, RecordFrame, ResyncFrame
from application.follow_loop import OpenFollow
from application.ports.records import StoredRecord

PAGE = 1000


@dataclass(frozen=True)
class Batch:
    records: list[StoredRecord]
    after: int
    """The offset after the batch (its last record's sequence, or where it started)."""
    up_to_date: bool
    closed: bool
    """The stream is closed and the reader has all of it."""


@dataclass(frozen=True)
class Tick:
    pass


@dataclass(frozen=True)
class Ended:
    reason: str


async def batches(follow: OpenFollow) -> AsyncGenerator[Batch | Tick | Ended, None]:
    records: list[StoredRecord] = []
    after = follow.cursor
    async for frame in follow.frames():
        if isinstance(frame, RecordFrame):
            # The follow moves its cursor past a record once the record's frame is taken.
            records.append(frame.record)
            after = frame.record.sequence
            caught_up = after >= follow.head
            if len(records) >= PAGE or (caught_up and not follow.closed):
                yield Batch(records, after, caught_up, False)
                records = []
        elif isinstance(frame, KeepaliveFrame):
            if records:
                yield Batch(records, after, after >= follow.head, False)
                records = []
            yield Tick()
        elif isinstance(frame, EndFrame):
            if frame.reason == "closed":
                yield Batch(records, frame.last_sequence, True, True)
            else:
                yield Ended(frame.reason)
            return
        elif isinstance(frame, ResyncFrame):
            yield Ended("resync")
            return
