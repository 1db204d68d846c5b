from domain.principal import Principal
from entrypoints.testing.simulation import simulation

WRITER = Principal("alice", "t1", frozenset({"streams:read", "streams:write"}))


async def test_append_then_read_returns_the_records_above_the_cursor() -> None:
    service = simulation().service
    await service.definitions.create(WRITER, "run-1", {"stream_id": "s", "content_class": "x"})
    await service.appender.append(WRITER, "run-1", "s", [{"payload": {"n": 1}}, {"payload": 2}])
    result = await service.reading.read(WRITER, "run-1", "s", after=1)
    assert [record.sequence for record in result.page.records] == [2]
    assert result.page.records[0].payload == 2
