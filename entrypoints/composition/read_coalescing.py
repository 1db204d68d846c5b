"""Readers woken together read together: identical page reads are shared.

One commit wakes every local reader of a stream at once; readers at the same
cursor then ask the store the same question (`read_page(key, after, limit)`).
This decorator of the `RecordReader` port answers all the calls made within
one event-loop iteration with ONE query, issued in a later iteration, after
every one of those calls was made. Each caller therefore sees everything that
was committed when it called, exactly as with a query of its own: sharing
never hides a commit, it only saves the duplicates.
"""

from __future__ import annotations

import asyncio
from datetime import datetime

from application.ports.records import RecordPage, RecordReader
from domain.identifiers import StreamKey

_Question = tuple[StreamKey, int, int]


class CoalescingRecordReader:
    def __init__(self, inner: RecordReader) -> None:
        self._inner = inner
        self._gathering: dict[_Question, asyncio.Future[RecordPage]] = {}
        self.queries = 0
        self.calls = 0

    async def read_page(self, key: StreamKey, after: int, limit: int) -> RecordPage:
        self.calls += 1
        question = (key, after, limit)
        answer = self._gathering.get(question)
        if answer is None:
            loop = asyncio.get_running_loop()
            answer = loop.create_future()
            self._gathering[question] = answer
            loop.call_soon(self._ask, question, answer)
        # A caller that goes away must not cancel the answer the others wait for.
        return await asyncio.shield(answer)

    def _ask(self, question: _Question, answer: asyncio.Future[RecordPage]) -> None:
        # From here on, a new call starts a new query: it may come after commits this
        # query (which starts only now) would not see.
        del self._gathering[question]
        self.queries += 1
        query = asyncio.get_running_loop().create_task(self._inner.read_page(*question))
        query.add_done_callback(lambda done: _settle(answer, done))

    async def newest_appended_before(self, key: StreamKey, cutoff: datetime) -> int:
        return await self._inner.newest_appended_before(key, cutoff)


def _settle(answer: asyncio.Future[RecordPage], query: asyncio.Task[RecordPage]) -> None:
    if answer.cancelled():
        return
    if query.cancelled():
        answer.cancel()
    elif (error := query.exception()) is not None:
        answer.set_exception(error)
    else:
        answer.set_result(query.result())
