"""Request shapes and response parsing shared by the sync and async clients."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, TypeVar
from urllib.parse import quote

import httpx

from runnel_client.errors import RunnelError, error_from_response

API_PREFIX = "/api/workflow-streams"
T = TypeVar("T")


@dataclass(frozen=True)
class Record:
    """A record as readers get it."""

    sequence: int
    content_type: str
    appended_at: str
    payload: Any = None
    data: str | None = None
    object: dict[str, Any] | None = None
    idempotency_key: str | None = None
    stream_id: str | None = None
    """The stream it belongs to, in a run follow (`follow_run`); None in a single one."""

    @property
    def step(self) -> str | None:
        """The step whose stored text this record is: its `idempotency_key`. Live chunks
        whose `source` equals it are dropped once this record arrived (ADR 0019)."""
        return self.idempotency_key

    @classmethod
    def from_wire(cls, body: dict[str, Any]) -> Record:
        return cls(sequence=int(body["sequence"]), content_type=body["content_type"],
                   appended_at=body["appended_at"], payload=body.get("payload"),
                   data=body.get("data"), object=body.get("object"),
                   idempotency_key=body.get("idempotency_key"),
                   stream_id=body.get("stream_id"))


@dataclass(frozen=True)
class LiveEvent:
    """A best-effort chunk seen while following with `live=True`.

    `data` is the frame as sent, `{seq, data, source, attempt, index}`; the properties
    read its fields (`chunk` is the published chunk itself). `supersedes` is true on the
    first chunk of a higher `attempt` of its `source`: drop what you show of the earlier
    attempt (`LiveText` does)."""

    data: Any
    supersedes: bool = False

    def _field(self, name: str) -> Any:
        return self.data.get(name) if isinstance(self.data, dict) else None

    def _typed(self, name: str, kind: type[T]) -> T | None:
        value = self._field(name)
        return value if isinstance(value, kind) else None

    @property
    def chunk(self) -> Any:
        return self._field("data")

    @property
    def source(self) -> str | None:
        """The step the chunk belongs to, if the producer named one."""
        return self._typed("source", str)

    @property
    def attempt(self) -> int | None:
        return self._typed("attempt", int)

    @property
    def index(self) -> int | None:
        return self._typed("index", int)

    @property
    def seq(self) -> int | None:
        return self._typed("seq", int)

    @property
    def stream_id(self) -> str | None:
        """The stream it belongs to, in a run follow (`follow_run`)."""
        return self._typed("stream_id", str)


@dataclass(frozen=True)
class ReadPage:
    """One page of `read()`: `records` with `sequence > after`, ascending, dense. Read on
    from `next_cursor` (the last sequence of the page, or `after` for an empty page);
    `head` is the stream's last sequence, `earliest` its oldest retained one, `closed`
    whether more can come."""

    records: list[Record]
    next_cursor: int
    head: int
    earliest: int
    closed: bool

    @classmethod
    def from_wire(cls, body: dict[str, Any]) -> ReadPage:
        return cls(records=[Record.from_wire(item) for item in body["records"]],
                   next_cursor=int(body["next_cursor"]), head=int(body["head"]),
                   earliest=int(body["earliest"]), closed=bool(body["closed"]))


@dataclass(frozen=True)
class BrowserToken:
    """A read-only token of one stream for a browser's `EventSource` (ADR 0023): it
    subscribes to that stream only, for `ttl_seconds` at most 300, never past the
    backend's own token. `subscribe_url` is the stream's subscribe URL with the token in
    `?access_token=` (add `&live=true` for live chunks; the browser's `EventSource`
    sends `Last-Event-ID` itself when it reconnects)."""

    token: str
    expires_at: str
    subscribe_url: str


def stream_path(run_id: str, stream_id: str, *rest: str) -> str:
    parts = [API_PREFIX, "runs", quote(run_id, safe=""), "streams", quote(stream_id, safe="")]
    return "/".join([*parts, *rest])


def run_path(run_id: str, *rest: str) -> str:
    return "/".join([API_PREFIX, "runs", quote(run_id, safe=""), *rest])


def retry_after_seconds(response: httpx.Response, default: float = 1.0) -> float:
    try:
        return max(0.0, float(response.headers.get("Retry-After", default)))
    except ValueError:
        return default


def checked(response: httpx.Response) -> dict[str, Any]:
    """The JSON object of a 2xx response; a RunnelError for anything else."""
    if not response.is_success:
        raise problem_of(response)
    body = response.json() if response.content else {}
    return body if isinstance(body, dict) else {"items": body}


def problem_of(response: httpx.Response) -> RunnelError:
    try:
        problem = response.json()
        if not isinstance(problem, dict):
            raise ValueError
    except (ValueError, json.JSONDecodeError):
        problem = {"code": "http_error", "detail": response.text[:200]}
    error = error_from_response(response.status_code, problem, retry_after_seconds(response))
    if "Retry-After" in response.headers:
        error.retry_after = retry_after_seconds(response)
    return error


def records_body(records: list[dict[str, Any]]) -> dict[str, Any]:
    return {"records": records}
