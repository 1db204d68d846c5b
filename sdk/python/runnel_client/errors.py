"""Errors the SDK raises; each carries the server's problem+json `code`."""

from __future__ import annotations

from typing import Any


class RunnelError(Exception):
    """The server refused a request; `code` is the stable machine code of the problem."""

    def __init__(self, status: int, code: str, problem: dict[str, Any]) -> None:
        super().__init__(f"{status} {code}: {problem.get('detail', '')}")
        self.status = status
        self.code = code
        self.problem = problem


class BackpressureError(RunnelError):
    """Still backpressured after the client's bounded retries."""

    def __init__(self, status: int, code: str, problem: dict[str, Any],
                 retry_after: float) -> None:
        super().__init__(status, code, problem)
        self.retry_after = retry_after


class ResyncRequired(RunnelError):
    """Retention removed records after the reader's cursor; the reader must resync."""

    @property
    def earliest(self) -> int:
        return int(self.problem.get("earliest", 0))


class TokenExpired(RunnelError):
    """The token that opened a subscription expired, and the server ended it
    (`event: end`, reason `token_expired`). Follow again from `last_sequence` with a
    fresh token, or give `follow()` a `token_provider` and it does so itself."""

    def __init__(self, last_sequence: int) -> None:
        super().__init__(401, "token_expired", {
            "code": "token_expired",
            "detail": f"the subscription's token expired after sequence {last_sequence}",
            "last_sequence": last_sequence})
        self.last_sequence = last_sequence


def error_from_response(status: int, problem: dict[str, Any], retry_after: float) -> RunnelError:
    code = str(problem.get("code", "http_error"))
    if status == 429 and code == "backpressure":
        return BackpressureError(status, code, problem, retry_after)
    if status == 410 and code == "cursor_pruned":
        return ResyncRequired(status, code, problem)
    return RunnelError(status, code, problem)
