"""The agent: a DBOS workflow that answers prompts in turns (the DBOS example, ADR 0043).

Each prompt comes in through the run's input stream `prompts` (Runnel delivers it with
`RUNNEL_WAIT_SERVICE=dbos`); each answer goes out on the output stream `answer`: every
token as a live chunk, and the finished turn as one durable record whose key is the live
`source`, so a reader drops the turn's live tokens once the stored turn arrives
(ADR 0019). A prompt `/bye` ends the conversation. A turn whose writes fail (the server is down) is
retried by DBOS as a whole: its live tokens come again with a higher attempt, and its record
keeps one copy, since its key is the step's position in the run.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from dbos import DBOS
from runnel_client import AsyncRunnelClient
from runnel_client.dbos import InputReader, StepWriter

from examples.agent.model import tokens

PROMPTS, ANSWER = "prompts", "answer"


class Runnel:
    """Where the steps write, set by the process before DBOS launches (never a workflow
    input: inputs are stored in the DBOS system database, and this holds a token)."""

    url = ""
    token: Callable[[], str] = str


def configure(url: str, token: Callable[[], str]) -> None:
    Runnel.url, Runnel.token = url, token


@DBOS.step(retries_allowed=True, max_attempts=30, interval_seconds=0.5, backoff_rate=1.2)
async def answer_turn(run_id: str, turn: int, prompt: str) -> str:
    async with AsyncRunnelClient(Runnel.url, Runnel.token) as client, \
            StepWriter(client, run_id, ANSWER) as writer:
        text = ""
        async for piece in tokens(turn, prompt):
            writer.live(piece)
            text += piece
        await writer.finish({"turn": turn, "prompt": prompt, "text": text})
    return text


@DBOS.workflow()
async def conversation(run_id: str, max_turns: int = 100) -> list[str]:
    """Answer each prompt of the run's input stream, in order, until `/bye`."""
    reader = InputReader(PROMPTS)
    answers: list[str] = []
    while len(answers) < max_turns:
        event: dict[str, Any] | None = await reader.next_async(timeout_seconds=3600)
        if event is None:
            continue
        prompt = str(event["record"]["payload"].get("prompt", ""))
        if prompt.strip() == "/bye":
            break
        answers.append(await answer_turn(run_id, len(answers) + 1, prompt))
    return answers
