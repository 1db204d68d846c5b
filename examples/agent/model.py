"""A fake language model: deterministic tokens with small pauses, so the example needs no
model download and a test knows the whole answer in advance."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

PAUSE_SECONDS = 0.05


def answer_text(turn: int, prompt: str) -> str:
    """The whole answer to `prompt` in turn `turn` (what the tokens add up to)."""
    words = prompt.split() or ["nothing"]
    return (f"Turn {turn}: you said {len(words)} word{'s' if len(words) != 1 else ''}, "
            f"the longest being {max(words, key=len)!r}. Every token you saw arrived live; "
            "this sentence is the stored turn.")


async def tokens(turn: int, prompt: str,
                 pause_seconds: float = PAUSE_SECONDS) -> AsyncIterator[str]:
    """The answer as tokens: each word with the space that follows it."""
    words = answer_text(turn, prompt).split(" ")
    for index, word in enumerate(words):
        await asyncio.sleep(pause_seconds)
        yield word if index == len(words) - 1 else word + " "
