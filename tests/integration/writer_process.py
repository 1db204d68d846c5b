"""A writer that runs as its own OS process, appending through the application layer.

    python -m tests.integration.writer_process batches DSN STREAM WRITER BATCHES SIZE
    python -m tests.integration.writer_process hang-before-commit DSN STREAM SIZE
    python -m tests.integration.writer_process churn DSN WRITER RUNS ROUNDS

`batches` appends BATCHES batches of SIZE records (payload {"w", "b", "i"}) and
prints one JSON line per batch: {"b": n, "sequences": [...]} or {"b": n, "error": code}.
`hang-before-commit` appends one batch but stops for good after the group's
writes and before its COMMIT, printing "WRITTEN" (the parent then kills it).
`churn` goes ROUNDS times over the runs `erase-0`…`erase-<RUNS-1>`, each time creating
a stream of its own there and appending to it and to the run's shared stream `s`, and
prints "STARTED" once its first round is done, then one JSON line of counts:
{"stored": n, "refused": {code: n}}.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys

from adapters.postgres import open_postgres
from domain.errors import DomainError
from tests.integration.support import RUN, WRITER, service_on


def emit(line: dict[str, object] | str) -> None:
    sys.stdout.write((line if isinstance(line, str) else json.dumps(line)) + "\n")
    sys.stdout.flush()


async def batches(dsn: str, stream: str, writer: int, count: int, size: int) -> None:
    adapters = await open_postgres(dsn, migrate=False, listen=False, pool_size=3)
    try:
        service = service_on(adapters)
        for batch in range(count):
            records = [{"payload": {"w": writer, "b": batch, "i": i}} for i in range(size)]
            try:
                result = await service.appender.append(WRITER, RUN, stream, records)
            except DomainError as refused:
                emit({"b": batch, "error": refused.code})
            else:
                emit({"b": batch, "sequences": list(result.sequences)})
    finally:
        await adapters.close()


async def churn(dsn: str, writer: int, runs: int, rounds: int) -> None:
    adapters = await open_postgres(dsn, migrate=False, listen=False, pool_size=3)
    stored = 0
    refused: dict[str, int] = {}
    try:
        service = service_on(adapters)
        for round_ in range(rounds):
            for run in range(runs):
                run_id = f"erase-{run}"
                try:
                    for stream in ("s", f"w{writer}-{round_}"):
                        await service.definitions.create(WRITER, run_id, {
                            "stream_id": stream, "content_class": "output.text"})
                        await service.appender.append(WRITER, run_id, stream,
                                                      [{"payload": {"w": writer}}])
                        stored += 1
                except DomainError as refusal:
                    refused[refusal.code] = refused.get(refusal.code, 0) + 1
            if round_ == 0:
                emit("STARTED")
    finally:
        await adapters.close()
    emit({"stored": stored, "refused": refused})


async def hang_before_commit(dsn: str, stream: str, size: int) -> None:
    adapters = await open_postgres(dsn, migrate=False, listen=False, pool_size=3)

    async def hang() -> None:
        emit("WRITTEN")
        await asyncio.Event().wait()  # forever: the parent kills us here

    adapters.store.committer.before_commit = hang
    # Only a locked group has a moment between its writes and its COMMIT; an optimistic
    # one is a single autocommit statement, atomic by itself.
    adapters.store.committer.optimistic = False
    service = service_on(adapters)
    records = [{"payload": {"killed": True, "i": i}} for i in range(size)]
    await service.appender.append(WRITER, RUN, stream, records)
    emit("COMMITTED")  # never reached


def main() -> None:
    parser = argparse.ArgumentParser()
    commands = parser.add_subparsers(dest="command", required=True)
    many = commands.add_parser("batches")
    for name in ("dsn", "stream"):
        many.add_argument(name)
    for name in ("writer", "count", "size"):
        many.add_argument(name, type=int)
    hang = commands.add_parser("hang-before-commit")
    hang.add_argument("dsn")
    hang.add_argument("stream")
    hang.add_argument("size", type=int)
    many_runs = commands.add_parser("churn")
    many_runs.add_argument("dsn")
    for name in ("writer", "runs", "rounds"):
        many_runs.add_argument(name, type=int)
    args = parser.parse_args()
    if args.command == "batches":
        asyncio.run(batches(args.dsn, args.stream, args.writer, args.count, args.size))
    elif args.command == "churn":
        asyncio.run(churn(args.dsn, args.writer, args.runs, args.rounds))
    else:
        asyncio.run(hang_before_commit(args.dsn, args.stream, args.size))


if __name__ == "__main__":
    main()
