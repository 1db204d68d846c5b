"""Forks of facade streams, copy-on-fork (ADR 0041): a fork is a Runnel stream of its own
that starts with a copy of its source's records up to the fork point, so it outlives its
source and never reads another run.

Rules:
- the point is (offset, sub-offset): every record through `offset`, then the first
  `sub_offset` messages (JSON) or bytes (others) of the next record, which must exist and
  hold at least that many;
- the copy is made before the fork's catalog entry exists, so no reader ever sees a
  half-copied fork (a crash mid-copy leaves a run no path names);
- copied records carry no idempotency keys: producer state never crosses a fork.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass, replace
from typing import Any

from application.durable_streams.stream_config import StreamConfig
from application.ports.durable_streams import FacadeEntry, ForkRefused
from application.ports.records import StoredRecord
from application.service import RunnelService
from domain.principal import Principal

COPY_PAGE = 500
FACADE_STREAM = "stream"


@dataclass(frozen=True)
class ForkPoint:
    source_run: str
    offset: int
    sub_offset: int


async def resolve_point(service: RunnelService, principal: Principal, source_run: str,
                        offset: int | None, sub_offset: int) -> ForkPoint:
    """Check the point against the source as it is now; None offset: its tail."""
    page = (await service.reading.read(principal, source_run, FACADE_STREAM, 0, 1)).page
    through = page.head if offset is None else offset
    if through > page.head:
        raise ForkRefused("the fork offset is beyond the source's tail")
    if sub_offset:
        following = await _record(service, principal, source_run, through)
        if following is None or sub_offset > _length(following):
            raise ForkRefused("the fork sub-offset is past the next append")
    return ForkPoint(source_run, through, sub_offset)


async def copy_prefix(service: RunnelService, principal: Principal, point: ForkPoint,
                      target_run: str) -> None:
    after = 0
    while after < point.offset:
        limit = min(COPY_PAGE, point.offset - after)
        page = (await service.reading.read(principal, point.source_run, FACADE_STREAM,
                                           after, limit)).page
        records = [record for record in page.records if record.sequence <= point.offset]
        if not records:
            break
        await service.appender.append(principal, target_run, FACADE_STREAM,
                                      [_wire(record) for record in records],
                                      message_batches=True)
        after = records[-1].sequence
    if point.sub_offset:
        following = await _record(service, principal, point.source_run, point.offset)
        assert following is not None  # checked by resolve_point; records are immutable
        await service.appender.append(principal, target_run, FACADE_STREAM,
                                      [_wire(following, point.sub_offset)],
                                      message_batches=True)


async def _record(service: RunnelService, principal: Principal, run_id: str,
                  after: int) -> StoredRecord | None:
    page = (await service.reading.read(principal, run_id, FACADE_STREAM, after, 1)).page
    return page.records[0] if page.records else None


def _length(record: StoredRecord) -> int:
    if record.has_payload:
        return len(record.payload) if isinstance(record.payload, list) else 1
    return len(record.data or b"")


def _wire(record: StoredRecord, cut: int | None = None) -> dict[str, Any]:
    if record.has_payload:
        payload = record.payload
        if cut is not None and isinstance(payload, list):
            payload = payload[:cut]
        return {"payload": payload}
    data = record.data or b""
    return {"data": base64.b64encode(data if cut is None else data[:cut]).decode(),
            "content_type": record.content_type}


async def fork_into(service: RunnelService, principal: Principal, config: StreamConfig,
                    source: FacadeEntry, run_id: str) -> StreamConfig:
    """Copy the source's prefix into the new run; the config as the fork gets it (the
    source's TTL or expiry unless it names its own)."""
    point = await resolve_point(service, principal, source.run_id, config.fork_offset,
                                config.fork_sub_offset)
    await copy_prefix(service, principal, point, run_id)
    ttl, expires_at = config.ttl_seconds, config.expires_at
    if ttl is None and expires_at is None:
        ttl, expires_at = source.ttl_seconds, source.expires_at
    return replace(config, ttl_seconds=ttl, expires_at=expires_at, fork_offset=point.offset)
