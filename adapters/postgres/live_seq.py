"""Numbering live chunks in the transaction that NOTIFYs them (ADR 0017).

Postgres hands NOTIFYs to every listener in commit order. The sending transaction
locks the `live_seq` row of each of its streams (in stream-id order, so two nodes never
deadlock), numbers its chunks with `domain.live_seq`, saves the new state and NOTIFYs,
all before COMMIT. A transaction that numbers after another waited for that one's
row lock, so it commits, and is delivered, after it: every listener gets the chunks of a
stream in the order of their numbers, whichever node sent them, across restarts.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

import asyncpg

from adapters.postgres.ids import stream_id
from adapters.postgres.notifications import LIVE_CHANNEL
from application.ports.waking import LiveChunk, LiveDraft
from domain.canonical_json import compact_text
from domain.live_seq import LiveRun, LiveSeq

# ON CONFLICT DO UPDATE locks an existing row (waiting for a concurrent sender) and
# returns its committed state; a first chunk of a stream inserts the row.
_LOCK = """
INSERT INTO live_seq (stream, state)
SELECT stream, '{}'::jsonb FROM unnest($1::uuid[]) AS stream ORDER BY stream
ON CONFLICT (stream) DO UPDATE SET state = live_seq.state
RETURNING stream, state::text
"""

_SAVE_AND_NOTIFY = f"""
WITH saved AS (
    UPDATE live_seq SET state = given.state
    FROM unnest($1::uuid[], $2::jsonb[]) AS given (stream, state)
    WHERE live_seq.stream = given.stream
)
SELECT pg_notify('{LIVE_CHANNEL}', chunk) FROM unnest($3::text[]) AS chunk
"""


async def number_and_notify(connection: asyncpg.Connection, drafts: Sequence[LiveDraft],
                            encode: Callable[[LiveChunk], str | None]
                            ) -> tuple[list[LiveChunk], int]:
    """Number `drafts` (in their order) and NOTIFY them in one transaction; returns the
    numbered chunks and how many could not ride a NOTIFY (`encode` returned None: they
    keep their number, so readers see the gap)."""
    ids = {draft.stream: stream_id(draft.stream) for draft in drafts}
    async with connection.transaction():
        rows = await connection.fetch(_LOCK, sorted(set(ids.values())))
        states = {row["stream"]: decode_state(row["state"]) for row in rows}
        chunks = []
        for draft in drafts:
            key = ids[draft.stream]
            seq, states[key] = states[key].assign(draft.position)
            chunks.append(draft.numbered(seq))
        payloads = [payload for payload in map(encode, chunks) if payload is not None]
        streams = sorted(states)
        await connection.execute(_SAVE_AND_NOTIFY, streams,
                                 [encode_state(states[key]) for key in streams], payloads)
    return chunks, len(chunks) - len(payloads)


def encode_state(state: LiveSeq) -> str:
    return compact_text({"n": state.next, "g": state.growing,
                         "r": [[run.source, run.attempt, run.first, run.last, run.base]
                               for run in state.runs]})


def decode_state(text: str) -> LiveSeq:
    encoded: dict[str, Any] = json.loads(text)
    if not encoded:
        return LiveSeq()
    return LiveSeq(encoded["n"], tuple(LiveRun(*run) for run in encoded["r"]), encoded["g"])

