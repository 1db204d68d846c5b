"""A DBOS application for the integration tests, run as its own process so a test can
kill it with -9 and start it again (DBOS then recovers the pending workflows).

    python -m tests.dbos.workflows <system-db-url> <command> <json args>

Commands (each prints one JSON line on stdout when done; `ready` first, after launch):
- `inputs {workflow_id, stream_id, count}`: a workflow that reads `count` events of one
  input stream with `InputReader` and returns their `[sequence, event_id, record]`;
- `produce {workflow_id, url, token, run_id, stream_id, turns, chunks, pause}`: a workflow of
  `turns` steps, each storing `chunks` durable chunks with random bodies through
  `StepWriter`, then its turn record, sleeping `pause` s between chunks;
- `retry {workflow_id, url, token, run_id, stream_id}`: one step retried once: its first
  attempt sends live chunks and fails, its second sends live chunks and finishes;
- `resume {workflow_id}`: launch only (DBOS recovers what was pending) and wait for the
  workflow's result.
"""

from __future__ import annotations

import asyncio
import json
import sys
import uuid
from typing import Any

from dbos import DBOS, SetWorkflowID
from runnel_client import AsyncRunnelClient
from runnel_client.dbos import InputReader, StepWriter


@DBOS.workflow()
def read_inputs(stream_id: str, count: int) -> list[list[Any]]:
    reader = InputReader(stream_id)
    events: list[list[Any]] = []
    while len(events) < count:
        event = reader.next(timeout_seconds=5)
        if event is not None:
            events.append([event["sequence"], event["event_id"], event["record"]])
    return events


@DBOS.step()
async def produce_turn(url: str, token: str, run_id: str, stream_id: str, turn: int,
                       chunks: int, pause: float) -> int:
    async with AsyncRunnelClient(url, token) as client, \
            StepWriter(client, run_id, stream_id) as writer:
        for index in range(chunks):
            writer.live(f"t{turn}-{index}")
            await writer.append({"turn": turn, "index": index, "nonce": uuid.uuid4().hex})
            await asyncio.sleep(pause)
        answer = await writer.finish({"turn": turn, "done": True, "nonce": uuid.uuid4().hex})
    return int(answer["sequences"][0])


@DBOS.workflow()
async def produce(url: str, token: str, run_id: str, stream_id: str, turns: int, chunks: int,
                  pause: float) -> int:
    for turn in range(turns):
        await produce_turn(url, token, run_id, stream_id, turn, chunks, pause)
    return turns


@DBOS.step(retries_allowed=True, max_attempts=3, interval_seconds=0.2, backoff_rate=1.0)
async def flaky_turn(url: str, token: str, run_id: str, stream_id: str) -> int:
    async with AsyncRunnelClient(url, token) as client, \
            StepWriter(client, run_id, stream_id) as writer:
        for index in range(3):
            writer.live(f"attempt-{writer.attempt}-{index}")
        await writer.aclose()
        if writer.attempt == 1:
            raise RuntimeError("the first attempt fails on purpose")
        await writer.finish({"attempt": writer.attempt})
        return writer.attempt


@DBOS.workflow()
async def retry(url: str, token: str, run_id: str, stream_id: str) -> int:
    return await flaky_turn(url, token, run_id, stream_id)


def main() -> None:
    system_database_url, command = sys.argv[1], sys.argv[2]
    args: dict[str, Any] = json.loads(sys.argv[3]) if len(sys.argv) > 3 else {}
    DBOS(config={"name": "runnel-dbos-test", "system_database_url": system_database_url,
                  "application_version": "runnel-tests", "log_level": "WARNING"})
    DBOS.launch()
    print(json.dumps({"ready": True}), flush=True)
    workflow_id = args.pop("workflow_id")
    if command == "resume":
        result = DBOS.retrieve_workflow(workflow_id).get_result()
    else:
        with SetWorkflowID(workflow_id):
            if command == "inputs":
                handle = DBOS.start_workflow(read_inputs, args["stream_id"], args["count"])
            elif command == "produce":
                handle = DBOS.start_workflow(produce, **args)
            else:
                handle = DBOS.start_workflow(retry, **args)
        result = handle.get_result()
    print(json.dumps({"result": result}), flush=True)
    DBOS.destroy()


if __name__ == "__main__":
    main()
