"""The native stream lifecycle through the SDK (ADR 0075, 0076), held against
`InMemoryRunnel` and a real server alike: delete, the expiry pin, long-polled reads."""

from __future__ import annotations

import asyncio

import pytest
from runnel_client import RunnelError

from tests.http.support import GUARD_SECONDS
from tests.sdk.contract.conftest import Target

DEFINITION = {"content_class": "output.text"}
ADMIN_SCOPES = ("streams:read", "streams:write", "streams:admin")


async def test_delete_erases_the_stream_and_its_id_is_not_reused(target: Target,
                                                                 run_id: str) -> None:
    async with target.async_client() as writer, \
            target.async_client(target.mint(scopes=("streams:read",))) as reader, \
            target.async_client(target.mint(scopes=ADMIN_SCOPES)) as admin:
        stream = writer.stream(run_id, "s")
        await stream.create(DEFINITION)
        await stream.append([{"payload": 1}, {"payload": 2}])
        with pytest.raises(RunnelError) as refused:
            await reader.stream(run_id, "s").delete()
        assert (refused.value.status, refused.value.code) == (403, "forbidden")
        deleted = await stream.delete()
        assert deleted == {"run_id": run_id, "stream_id": "s", "deleted": True,
                           "records_deleted": 2, "objects_deleted": 0}
        again = await admin.delete_stream(run_id, "s")
        assert (again["records_deleted"], again["objects_deleted"]) == (0, 0)
        for call in (stream.info(), stream.read(), stream.append([{"payload": 3}])):
            with pytest.raises(RunnelError) as gone:
                await call
            assert (gone.value.status, gone.value.code) == (404, "not_found")
        with pytest.raises(RunnelError) as reused:
            await stream.create(DEFINITION)
        assert (reused.value.status, reused.value.code) == (409, "stream_deleted")


async def test_a_held_stream_is_not_deleted(target: Target, run_id: str) -> None:
    async with target.async_client(target.mint(scopes=ADMIN_SCOPES)) as admin, \
            target.async_http(target.mint(scopes=ADMIN_SCOPES)) as http:
        stream = admin.stream(run_id, "s")
        await stream.create(DEFINITION)
        held = await http.put(f"/runs/{run_id}/streams/s/legal-hold", json={"held": True})
        assert held.status_code == 200
        with pytest.raises(RunnelError) as refused:
            await stream.delete()
        assert (refused.value.status, refused.value.code) == (409, "legal_hold")
        assert (await stream.info())["status"]["legal_hold"] is True


async def test_the_expiry_pin_is_part_of_the_definition(target: Target, run_id: str) -> None:
    async with target.async_client() as runnel:
        created = await runnel.stream(run_id, "s").create(
            {**DEFINITION, "expires_after_seconds": 3600})
        assert created["definition"]["expires_after_seconds"] == 3600
        with pytest.raises(RunnelError) as refused:
            await runnel.stream(run_id, "t").create({**DEFINITION, "expires_after_seconds": 0})
        assert (refused.value.status, refused.value.code) == (422, "invalid_definition")


async def test_a_long_polled_read_answers_the_record_appended_meanwhile(
        target: Target, run_id: str) -> None:
    async with target.async_client() as runnel:
        stream = runnel.stream(run_id, "s")
        await stream.create(DEFINITION)
        await stream.append([{"payload": 1}])
        at_once = await stream.read(wait=30)
        assert [record.payload for record in at_once.records] == [1]
        idle = await stream.read(after=1, wait=0.1)
        assert (idle.records, idle.next_cursor, idle.closed) == ([], 1, False)
        waiting = asyncio.create_task(stream.read(after=1, wait=30))
        async with asyncio.timeout(GUARD_SECONDS):
            n = 2
            while not waiting.done():  # the first append may come before the wait starts
                await stream.append([{"payload": n}])
                n += 1
                await asyncio.wait([waiting], timeout=0.2)
        page = await waiting
        assert page.records[0].sequence == 2
        with pytest.raises(RunnelError) as refused:
            await stream.read(wait=31)
        assert (refused.value.status, refused.value.code) == (400, "invalid_wait")


async def test_the_sync_face_deletes_and_long_polls(target: Target, run_id: str) -> None:
    def lifecycle() -> tuple[int, int]:
        with target.client() as runnel, target.client(target.mint(scopes=ADMIN_SCOPES)) as admin:
            stream = runnel.stream(run_id, "s")
            stream.create(DEFINITION)
            stream.append([{"payload": 1}])
            page = stream.read(after=1, wait=0.1)
            deleted = admin.stream(run_id, "s").delete()
            return len(page.records), deleted["records_deleted"]

    assert await asyncio.wait_for(asyncio.to_thread(lifecycle), GUARD_SECONDS) == (0, 1)
