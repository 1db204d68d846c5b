"""`runnel tail` against a real server: prints every record once and exits 0 on `end`."""

from __future__ import annotations

import asyncio
import io
import json
import sys
from pathlib import Path

import httpx

from entrypoints.tail import tail
from tests.http.server import RunnelServer, token
from tests.http.support import GUARD_SECONDS, append, create_stream

ROOT = Path(__file__).parents[2]


async def start_tail(server: RunnelServer, *args: str) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable, "-m", "entrypoints.cli", "tail", *args, "--url", server.url,
        "--token", token(), stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        cwd=ROOT)


async def finish(process: asyncio.subprocess.Process) -> tuple[int, list[str], str]:
    async with asyncio.timeout(GUARD_SECONDS):
        out, err = await process.communicate()
    assert process.returncode is not None
    return process.returncode, out.decode().splitlines(), err.decode()


async def test_tail_prints_records_and_exits_0_when_the_stream_closes(
        server: RunnelServer, api: httpx.AsyncClient, run_id: str) -> None:
    await create_stream(api, run_id)
    await append(api, run_id, "s", [{"n": 1}, "two"])
    process = await start_tail(server, run_id, "s")
    try:
        assert process.stdout is not None
        async with asyncio.timeout(GUARD_SECONDS):
            first = await process.stdout.readline()  # following now
        await append(api, run_id, "s", [3, {"n": "ü"}])
        await api.post(f"/runs/{run_id}/streams/s/close")
        code, lines, err = await finish(process)
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    lines = [first.decode().rstrip("\n"), *lines]
    assert code == 0, err
    assert [line.split("\t", 1) for line in lines] == [
        ["1", '{"n": 1}'], ["2", '"two"'], ["3", "3"], ["4", '{"n": "ü"}']]
    assert "last sequence 4" in err.splitlines()[-1]
    assert "reconnects 0" in err and "records/s" in err


def run_tail(server: RunnelServer, *args: str, secret: str | None = None,
             ) -> tuple[int, list[str], str]:
    out, err = io.StringIO(), io.StringIO()
    run_id, stream_id, after = args
    code = tail(server.url, secret or token(), run_id, stream_id, int(after), False, out, err)
    return code, out.getvalue().splitlines(), err.getvalue()


async def test_tail_after_starts_above_the_cursor(server: RunnelServer, api: httpx.AsyncClient,
                                                  run_id: str) -> None:
    await create_stream(api, run_id)
    await append(api, run_id, "s", ["a", "b", "c"])
    await api.post(f"/runs/{run_id}/streams/s/close")
    code, lines, err = await asyncio.to_thread(run_tail, server, run_id, "s", "1")
    assert code == 0, err
    assert [json.loads(line.split("\t", 1)[1]) for line in lines] == ["b", "c"]
    assert [line.split("\t", 1)[0] for line in lines] == ["2", "3"]
    assert "last sequence 3" in err


async def test_tail_with_a_bad_token_fails(server: RunnelServer, run_id: str) -> None:
    code, lines, err = await asyncio.to_thread(run_tail, server, run_id, "s", "0",
                                               secret="not-a-jwt")
    assert (code, lines) == (1, [])
    assert "401" in err


async def test_tail_live_prints_live_chunks_beside_the_records(
        server: RunnelServer, api: httpx.AsyncClient, run_id: str) -> None:
    await create_stream(api, run_id)
    await append(api, run_id, "s", ["first"])
    process = await start_tail(server, run_id, "s", "--live")
    try:
        assert process.stdout is not None
        async with asyncio.timeout(GUARD_SECONDS):
            first = await process.stdout.readline()  # following now, live chunks included
        published = await api.post(f"/runs/{run_id}/streams/s/live",
                                   json={"chunks": ["tok", {"t": 1}]})
        assert published.status_code == 202
        await append(api, run_id, "s", ["second"])
        await api.post(f"/runs/{run_id}/streams/s/close")
        code, lines, err = await finish(process)
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    assert code == 0, err
    lines = [first.decode().rstrip("\n"), *lines]
    # Live chunks and records travel separately: each kind keeps its own order.
    chunks = [json.loads(line.split("\t", 1)[1]) for line in lines if line.startswith("live\t")]
    assert [(chunk["data"], chunk["index"]) for chunk in chunks] == [("tok", 0), ({"t": 1}, 1)]
    assert chunks[0]["seq"] < chunks[1]["seq"]
    assert [line for line in lines if not line.startswith("live\t")] == [
        '1\t"first"', '2\t"second"']
