"""Errors the SDK raises; each carries the server's problem+json `code`.

Every refusal is a `RunnelError` (`status`, `code`, `problem`). The subclasses name
the ones a caller acts on differently: `TokenExpired` (take a fresh token and go on)
apart from `Unauthenticated` (the token is bad: a fresh copy will not help),
`BackpressureError`, `ResyncRequired`, and `AppendFailed`, the one error a
`Producer` raises when it gives up.
"""

from __future__ import annotations

from typing import Any


class RunnelError(Exception):
    """The server refused a request; `code` is the stable machine code of the problem.
    `retry_after` is the answer's `Retry-After` in seconds, when it had one."""

    retry_after: float | None = None

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
        self.retry_after: float = retry_after


class ResyncRequired(RunnelError):
    """Retention removed records after the reader's cursor; the reader must resync."""

    @property
    def earliest(self) -> int:
        return int(self.problem.get("earliest", 0))


class Unauthenticated(RunnelError):
    """401 for a token that is missing, malformed, badly signed, revoked or of another
    issuer: asking the same source for a fresh token will not help."""


class TokenExpired(RunnelError):
    """The token expired: take a fresh one and go on. Raised for a request answered 401
    because its token expired, and when the server ended a subscription at its token's
    expiry (`event: end`, reason `token_expired`); then `last_sequence` is the cursor to
    follow on from (`follow()` with a callable token or a `token_provider` does so
    itself). `code` is `token_expired` either way."""

    def __init__(self, last_sequence: int | None = None,
                 problem: dict[str, Any] | None = None) -> None:
        detail = (f"the subscription's token expired after sequence {last_sequence}"
                  if last_sequence is not None else "the token expired")
        body = {"detail": detail, **(problem or {}), "code": "token_expired"}
        if last_sequence is not None:
            body["last_sequence"] = last_sequence
        super().__init__(401, "token_expired", body)
        self.last_sequence = last_sequence


class AppendFailed(RunnelError):
    """A `Producer` gave up on a batch: after `attempts` tries of a retryable failure
    (429, 5xx, a transport error), or at once for a refusal no retry can change (422,
    409 `stream_closed`, 413, …). `status`/`code` are those of the last answer (`0` /
    `transport_error` when none came); `records` are the records not known to be
    stored, with their idempotency keys, so that sending them again later stores each
    at most once. The producer refuses further writes after it."""

    def __init__(self, cause: RunnelError | Exception, attempts: int,
                 records: list[dict[str, Any]]) -> None:
        if isinstance(cause, RunnelError):
            status, code, problem = cause.status, cause.code, dict(cause.problem)
        else:
            status, code = 0, "transport_error"
            problem = {"code": code, "detail": f"{type(cause).__name__}: {cause}"}
        problem["detail"] = f"gave up after {attempts} attempt(s): {problem.get('detail', '')}"
        super().__init__(status, code, problem)
        self.attempts = attempts
        self.records = records


def _expired(problem: dict[str, Any]) -> bool:
    """The server answers an expired token with 401 `unauthenticated` and a detail that
    says so (`token expired`, `subscribe token expired`); a `reason` field wins."""
    reason = problem.get("reason")
    if isinstance(reason, str):
        return reason == "token_expired"
    detail = problem.get("detail")
    return isinstance(detail, str) and detail.endswith("token expired")


def error_from_response(status: int, problem: dict[str, Any], retry_after: float) -> RunnelError:
    code = str(problem.get("code", "http_error"))
    if status == 429 and code == "backpressure":
        return BackpressureError(status, code, problem, retry_after)
    if status == 410 and code == "cursor_pruned":
        return ResyncRequired(status, code, problem)
    if status == 401:
        return TokenExpired(problem=problem) if _expired(problem) else Unauthenticated(
            status, code, problem)
    return RunnelError(status, code, problem)
