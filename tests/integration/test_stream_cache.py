"""The process's cache of decoded streams: cheap clones, never stale.

`clone` copies containers one level deep, which is a full copy only while every
attribute of a stream is an immutable value or a flat container of immutable
values; the first test holds the domain to that, for any command history.
"""

from __future__ import annotations

from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any
from uuid import UUID

import pytest
from hypothesis import given, settings
from pydantic import BaseModel

from adapters.postgres import open_postgres
from adapters.postgres.group_commit.stream_cache import clone
from domain.definition import build_definition
from domain.identifiers import StreamKey
from domain.stream import Stream
from tests.integration.support import RUN, WRITER, definition, service_on
from tests.integration.test_aggregate_codec import commands, run_commands
from tests.pg import pg_dsn, pg_template  # noqa: F401  (fixtures)

IMMUTABLE = (str, int, float, bool, type(None), bytes, UUID, datetime, date, Decimal,
             frozenset, tuple)


def immutable(value: Any) -> bool:
    if isinstance(value, BaseModel):
        return bool(value.model_config.get("frozen"))
    return isinstance(value, IMMUTABLE)


@settings(max_examples=40, deadline=None)
@given(commands)
def test_a_clone_is_equal_and_shares_nothing_mutable(script: list[tuple[object, ...]]) -> None:
    raw = definition("s", consumers=["ui", "audit"], credit={"max_unread_items": 50})
    stream = Stream.start(StreamKey("t", "r", "s"), build_definition(raw, "local"),
                          datetime(2026, 1, 1, tzinfo=UTC))
    run_commands(stream, script)
    stream.collect_events()
    for name, value in vars(stream).items():
        if name == "_pending_events":
            continue
        if isinstance(value, list | set):
            assert all(immutable(item) for item in value), name
        elif isinstance(value, dict):
            assert all(immutable(k) and immutable(v) for k, v in value.items()), name
        else:
            assert immutable(value), name
    copied = clone(stream)
    assert vars(copied) == vars(stream)
    for name, value in vars(stream).items():
        if isinstance(value, list | dict | set):
            assert vars(copied)[name] is not value, name


@pytest.mark.postgres
async def test_a_load_never_serves_a_state_another_process_has_moved_past(
        pg_dsn: str) -> None:  # noqa: F811
    here = await open_postgres(pg_dsn, migrate=False, listen=False)
    there = await open_postgres(pg_dsn, migrate=False, listen=False)
    try:
        key = StreamKey(WRITER.tenant, RUN, "s")
        await service_on(here).definitions.create(WRITER, RUN, definition("s"))
        await service_on(here).appender.append(WRITER, RUN, "s", [{"payload": 1}])
        first = await here.store.load(key)
        assert first is not None and first.head == 1
        first.close()  # a caller changing its copy changes nothing shared
        again = await here.store.load(key)
        assert again is not None and not again.closed and again is not first
        await service_on(there).appender.append(WRITER, RUN, "s", [{"payload": 2}])
        moved = await here.store.load(key)
        assert moved is not None and (moved.head, moved.closed) == (2, False)
        result = await service_on(here).appender.append(WRITER, RUN, "s", [{"payload": 3}])
        assert result.sequences == (3,)
        assert (await there.store.load(key)).head == 3  # type: ignore[union-attr]
    finally:
        await here.close()
        await there.close()
