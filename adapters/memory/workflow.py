"""In-memory workflow wait service: records what it was given, can be told to fail."""

from __future__ import annotations

from application.ports.outboxes import InputEvent


class MemoryWorkflowWaitService:
    def __init__(self, failures: int = 0) -> None:
        self.events: list[InputEvent] = []
        self._failures = failures

    def fail_next(self, times: int) -> None:
        self._failures = times

    async def publish(self, event: InputEvent) -> None:
        if self._failures > 0:
            self._failures -= 1
            raise ConnectionError("workflow wait service unavailable")
        self.events.append(event)
