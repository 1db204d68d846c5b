"""What a follow hands its reader, one frame at a time (`follow_loop.py` decides which):
a record, a live chunk, a keepalive, the end (with its reason and the last sequence
served) or a resync (the cursor fell below the earliest retained record)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from application.ports.records import StoredRecord
from application.ports.waking import LiveChunk


@dataclass(frozen=True)
class RecordFrame:
    record: StoredRecord


@dataclass(frozen=True)
class LiveFrame:
    chunk: LiveChunk


@dataclass(frozen=True)
class KeepaliveFrame:
    pass


EndReason = Literal["closed", "token_expired", "token_revoked", "shutdown"]


@dataclass(frozen=True)
class EndFrame:
    last_sequence: int
    reason: EndReason = "closed"


@dataclass(frozen=True)
class ResyncFrame:
    requested: int
    earliest: int
    latest: int


Frame = RecordFrame | LiveFrame | KeepaliveFrame | EndFrame | ResyncFrame
