"""Stream ids (UUIDv5 of the natural key), memoised: hashing them is a measurable share
of a small append, and every statement on a stream needs one."""

from __future__ import annotations

from uuid import UUID

from domain.identifiers import StreamKey

_LIMIT = 65_536
_ids: dict[StreamKey, UUID] = {}


def stream_id(key: StreamKey) -> UUID:
    found = _ids.get(key)
    if found is None:
        if len(_ids) >= _LIMIT:
            _ids.clear()
        found = _ids[key] = key.aggregate_id
    return found
