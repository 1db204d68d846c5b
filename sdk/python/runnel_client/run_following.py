"""What a run follower does with each SSE frame of `GET /runs/{run_id}/subscribe` (ADR
0073), shared by the sync and async clients.

The follower keeps the compound cursor: each stream's last sequence it yielded. A
reconnect resumes with `Last-Event-ID` set to that cursor (`stream_id=sequence` entries
joined by `,`, ascending, zeros left out), and a record at or below its stream's entry
is dropped, so a caller sees every record of every stream exactly once, in its stream's
order. `event: end` ends one stream (kept in `ended`); `event: resync` raises
`ResyncRequired` for its stream; `event: run_end` ends the run follow: `erased` returns,
`token_expired`, `token_revoked` and `shutdown` mean what they mean for a single
follow (`runnel_client.following`), `too_many_streams` reconnects and is refused (400
`too_many_streams_to_follow`). With `live=True` each stream's live chunks follow the
two-layer rules of `runnel_client.layers`, stream by stream.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from runnel_client.errors import ResyncRequired, TokenExpired, Unauthenticated
from runnel_client.following import Refused, Unavailable
from runnel_client.layers import Steps
from runnel_client.wire import LiveEvent, Record


class RunEnded(Exception):
    """Every stream of the run is erased and every one followed has ended."""


@dataclass
class RunFollowState:
    cursor: dict[str, int] = field(default_factory=dict)
    """Each stream's last sequence yielded (a stream not named: none yet)."""
    ended: dict[str, int] = field(default_factory=dict)
    """Streams closed and delivered whole, with their last sequence."""
    reconnects: int = 0
    duplicates: int = 0
    token_refreshes: int = 0
    steps: dict[str, Steps] = field(default_factory=dict)

    def cursor_text(self) -> str:
        return ",".join(f"{stream_id}={sequence}"
                        for stream_id, sequence in sorted(self.cursor.items()) if sequence > 0)

    def headers(self) -> dict[str, str]:
        headers = {"Accept": "text/event-stream"}
        if text := self.cursor_text():
            headers["Last-Event-ID"] = text
        return headers

    def accept(self, event: str, data: str) -> Record | LiveEvent | None:
        """Turn one frame into what the caller sees (None: nothing to show)."""
        body: Any = json.loads(data) if data else {}
        if event == "record":
            record = Record.from_wire(body)
            stream_id = str(record.stream_id)
            if record.sequence <= self.cursor.get(stream_id, 0):
                self.duplicates += 1
                return None
            self.cursor[stream_id] = record.sequence
            self._steps(stream_id).settle(record)
            return record
        if event == "live":
            return self._steps(str(body.get("stream_id"))).admit(body)
        if event == "end":
            self.ended[str(body.get("stream_id"))] = int(body.get("last_sequence", 0))
            return None
        if event == "resync":
            raise ResyncRequired(410, str(body.get("code", "cursor_pruned")), body)
        if event == "run_end":
            reason = body.get("reason")
            if reason == "erased":
                raise RunEnded
            if reason == "token_expired":
                raise TokenExpired()
            if reason == "token_revoked":  # a fresh token from the same source is refused
                raise Refused(Unauthenticated(401, "unauthenticated", {
                    **body, "detail": "the subscription's token was revoked"}), 0)
            raise Unavailable(f"the run follow ended: {reason}")
        return None

    def _steps(self, stream_id: str) -> Steps:
        return self.steps.setdefault(stream_id, Steps())
