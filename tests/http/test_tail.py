"""`runnel tail` against a real server: prints every record once and exits 0 on `end`."""

from __future__ import annotations

import asyncio
import io
import json
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx

from entrypoints.commands.tail import tail
from tests.http.server import RunnelServer, token
from tests.http.support import GUARD_SECONDS, append, create_stream
from tests.http.test_live import live_frames, subscribe

ROOT = Path(__file__).parents[2]


class Tail:
    """`runnel tail` as a child process: `following()` returns its first line (by then it
    follows the stream), `finish()` waits for its exit; it is killed if still running."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process

    async def following(self) -> str:
        assert self.process.stdout is not None
        async with asyncio.timeout(GUARD_SECONDS):
            return (await self.process.stdout.readline()).decode().rstrip("\n")

    async def finish(self) -> tuple[int, list[str], str]:
        async with asyncio.timeout(GUARD_SECONDS):
            out, err = await self.process.communicate()
        assert self.process.returncode is not None
        return self.process.returncode, out.decode().splitlines(), err.decode()


@asynccontextmanager
async def running_tail(server: RunnelServer, *args: str) -> AsyncIterator[Tail]:
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "entrypoints.commands", "tail", *args, "--url", server.url,
        "--token", token(), stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        cwd=ROOT)
    try:
        yield Tail(process)
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()


async def test_tail_prints_records_and_exits_0_when_the_stream_closes(
        server: RunnelServer, api: httpx.AsyncClient, run_id: str) -> None:
    await create_stream(api, run_id)
    await append(api, run_id, "s", [{"n": 1}, "two"])
    async with running_tail(server, run_id, "s") as tail_process:
        first = await tail_process.following()
        await append(api, run_id, "s", [3, {"n": "ü"}])
        await api.post(f"/runs/{run_id}/streams/s/close")
        code, lines, err = await tail_process.finish()
    lines = [first, *lines]
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
    async with running_tail(server, run_id, "s", "--live") as tail_process:
        first = await tail_process.following()  # live chunks included from now on
        witness = await subscribe(api, run_id, live=True)
        published = await api.post(f"/runs/{run_id}/streams/s/live",
                                   json={"chunks": ["tok", {"t": 1}]})
        assert published.status_code == 202
        # Chunks reach this server's readers together, through its listener (ADR 0017);
        # once a witness has them, the close cannot overtake them on the way to the tail.
        await witness.wait_for(lambda frames: len(live_frames(frames)) >= 2)
        await witness.stop()
        await append(api, run_id, "s", ["second"])
        await api.post(f"/runs/{run_id}/streams/s/close")
        code, lines, err = await tail_process.finish()
    assert code == 0, err
    lines = [first, *lines]
    # Live chunks and records travel separately: each kind keeps its own order.
    chunks = [json.loads(line.split("\t", 1)[1]) for line in lines if line.startswith("live\t")]
    assert [(chunk["data"], chunk["index"]) for chunk in chunks] == [("tok", 0), ({"t": 1}, 1)]
    assert chunks[0]["seq"] < chunks[1]["seq"]
    assert [line for line in lines if not line.startswith("live\t")] == [
        '1\t"first"', '2\t"second"']
