"""The facade's handlers: parse the protocol's headers, call `DurableStreams`, answer with
the protocol's status codes and headers (ADR 0041)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from litestar import Request, Response
from litestar.response import Stream

from application.durable_streams.facade import DurableStreams
from application.durable_streams.stream_config import StreamConfig
from application.ports.clock import Clock
from application.ports.durable_streams import (
    FacadeEntry,
    ForkRefused,
    PathInUse,
    StreamGone,
    WriterSeqRegression,
)
from domain.errors import Backpressure, DomainError, NotFound
from domain.principal import Principal
from domain.producer_fencing import NewEpochNotAtZero, SequenceGap, StaleEpoch
from entrypoints.http.durable_streams import wire
from entrypoints.http.durable_streams.bodies import to_records
from entrypoints.http.durable_streams.reads import ReadPlan, read_answer
from entrypoints.http.durable_streams.sse import sse_frames
from entrypoints.http.sse.subscription import ReaderLease, register_release
from entrypoints.observability.metrics import Metrics

NO_STORE = "no-store"
PREFIX = "/v1/stream"
RUN_HEADER = "runnel-run-id"
DEFINITION_HEADER = "runnel-definition"


class Facade:
    """Holds what every handler needs; `principal_of` is the tenant rule (a token, or
    the conformance binding)."""

    def __init__(self, streams: DurableStreams, principal_of: Any, clock: Clock,
                 long_poll_seconds: float, metrics: Metrics,
                 still_valid: Callable[[Principal], bool] = lambda _: True) -> None:
        self.streams = streams
        self.metrics = metrics
        self.principal_of = principal_of
        self.still_valid = still_valid
        """Whether a connection's principal may go on being served (not revoked, not
        expired): an SSE connection ends at its next batch or wait once it may not."""
        self.clock = clock
        self.long_poll_seconds = long_poll_seconds

    async def create(self, request: Request[Any, Any, Any], path: str) -> Response[Any]:
        principal = self.principal_of(request)
        headers = request.headers
        ttl = wire.parse_ttl(headers.get("stream-ttl"))
        expires_at = wire.parse_expires_at(headers.get("stream-expires-at"))
        if ttl is not None and expires_at is not None:
            raise wire.BadRequest("Stream-TTL and Stream-Expires-At exclude each other")
        asked = wire.parse_definition(headers.get(DEFINITION_HEADER))
        forked_from, fork_offset, sub_offset = wire.parse_fork(
            headers.get("stream-forked-from"), headers.get("stream-fork-offset"),
            headers.get("stream-fork-sub-offset"), PREFIX)
        content_type = wire.bounded(headers.get("content-type"), "Content-Type")
        if forked_from is not None:
            source = await self.streams.fork_source(principal, forked_from)
            if content_type is not None and (wire.media_type(content_type)
                                             != wire.media_type(source.content_type)):
                return plain(409, "a fork has its source's content type")
            content_type = content_type or source.content_type
        content_type = content_type or wire.DEFAULT_CONTENT_TYPE
        closing = wire.is_closing(headers.get("stream-closed"))
        records = to_records(content_type, await request.body(), allow_empty_array=True)
        config = StreamConfig(content_type, ttl, expires_at, forked_from, fork_offset,
                              sub_offset, asked)
        entry, created = await self.streams.create(principal, path, config)
        if created and (records or closing):
            await self.streams.append(principal, entry, records, closing, None)
        status = await self.streams.status(principal, entry, writing=True)
        if not created and status.closed != closing:
            return plain(409, "stream exists with a different closure status")
        answer = self._meta(entry, status.head, status.closed)
        if created:
            answer["location"] = str(request.url)
        return Response(None, status_code=201 if created else 200, headers=answer)

    async def append(self, request: Request[Any, Any, Any], path: str) -> Response[Any]:
        principal = self.principal_of(request)
        headers = request.headers
        closing = wire.is_closing(headers.get("stream-closed"))
        producer = wire.parse_producer(headers.get("producer-id"),
                                       headers.get("producer-epoch"), headers.get("producer-seq"))
        body = await request.body()
        if body and not closing and producer is None and "stream-seq" not in headers:
            answered = await self._plain_append(principal, path, headers, body)
            if answered is not None:
                return answered
        entry, status = await self.streams.find_for_writing(principal, path)
        if not body and not closing:
            raise wire.BadRequest("an append needs a body")
        if status.closed:
            if producer is not None and entry.closed_by == producer.tuple_text:
                return Response(None, status_code=204, headers={
                    **self._closed(status.head), **producer_headers(producer.epoch,
                                                                    producer.seq)})
            if not body:
                return Response(None, status_code=204, headers=self._closed(status.head))
            if producer is not None:
                state = await self.streams.producer_state(principal, entry, producer.producer_id)
                if state is not None and producer.epoch < state.epoch:
                    return Response(None, status_code=403,
                                    headers={"producer-epoch": str(state.epoch)})
            return Response(None, status_code=409, headers=self._closed(status.head))
        records: list[dict[str, Any]] = []
        if body:
            content_type = headers.get("content-type")
            if content_type is None:
                raise wire.BadRequest("Content-Type is required")
            if wire.media_type(content_type) != wire.media_type(entry.content_type):
                return plain(409, "content type does not match the stream's")
            records = to_records(entry.content_type, body, allow_empty_array=False)
        try:
            result = await self.streams.append(principal, entry, records, closing, producer,
                                               wire.bounded(headers.get("stream-seq"),
                                                            "Stream-Seq"))
        except StaleEpoch as stale:
            return Response(None, status_code=403, headers={"producer-epoch": str(stale.current)})
        except SequenceGap as gap:
            return Response(None, status_code=409, headers={
                "producer-expected-seq": str(gap.expected),
                "producer-received-seq": str(gap.received)})
        except WriterSeqRegression as regression:
            return plain(409, str(regression))
        except NewEpochNotAtZero:
            raise wire.BadRequest("a new producer epoch starts at sequence 0") from None
        if result is not None and result.stored:  # the head this append committed at
            head, closed = result.head, closing
        else:
            after = await self.streams.status(principal, entry, writing=True)
            head, closed = after.head, after.closed
        answer = {"stream-next-offset": wire.offset_of(head)}
        if closed:
            answer["stream-closed"] = "true"
        if producer is None:
            return Response(None, status_code=204, headers=answer)
        if result is None:  # a duplicate batch: the highest accepted sequence
            state = await self.streams.producer_state(principal, entry, producer.producer_id)
            seq = state.last_seq if state is not None else producer.seq
            return Response(None, status_code=204,
                            headers={**answer, **producer_headers(producer.epoch, seq)})
        return Response(None, status_code=200,
                        headers={**answer, **producer_headers(producer.epoch, producer.seq)})

    async def _plain_append(self, principal: Principal, path: str, headers: Any,
                            body: bytes) -> Response[Any] | None:
        """An append of records alone (no producer, no `Stream-Seq`, no close) that goes
        through: 204. None for anything else (a refused body, a closed stream, ...): the
        full path above decides that answer, in the protocol's order."""
        entry = await self.streams.find_writable(principal, path)
        content_type = headers.get("content-type")
        if content_type is None or (wire.media_type(content_type)
                                    != wire.media_type(entry.content_type)):
            return None
        try:
            records = to_records(entry.content_type, body, allow_empty_array=False)
            result = await self.streams.append_records(principal, entry, records)
        except Backpressure:  # refused inside the append's transaction: the stream is open
            raise
        except (wire.BadRequest, DomainError):  # nothing was stored
            return None
        return Response(None, status_code=204,
                        headers={"stream-next-offset": wire.offset_of(result.head)})

    async def head(self, request: Request[Any, Any, Any], path: str) -> Response[Any]:
        principal = self.principal_of(request)
        entry = await self.streams.find(principal, path)
        status = await self.streams.status(principal, entry)
        answer = self._meta(entry, status.head, status.closed)
        answer["cache-control"] = NO_STORE
        if entry.ttl_seconds is not None:
            answer["stream-ttl"] = str(entry.ttl_seconds)
        if entry.expires_at is not None:
            answer["stream-expires-at"] = entry.expires_at.isoformat().replace("+00:00", "Z")
        return Response(None, status_code=200, headers=answer)

    async def delete(self, request: Request[Any, Any, Any], path: str) -> Response[Any]:
        principal = self.principal_of(request)
        await self.streams.delete(principal, path)
        return Response(None, status_code=204)

    async def read(self, request: Request[Any, Any, Any], path: str) -> Response[Any]:
        principal = self.principal_of(request)
        query = request.query_params
        live = query.get("live")
        offsets = query.getall("offset", [])
        if live in ("long-poll", "sse") and not offsets:
            raise wire.BadRequest(f"live={live} needs an offset")
        offset = wire.parse_offset(offsets)
        entry = await self.streams.find_for_reading(principal, path)
        await self.streams.touch(principal, entry)
        plan = ReadPlan(self.streams, self.clock, self.long_poll_seconds, self.still_valid,
                        principal, entry, offset, query.get("cursor"))
        if live == "sse":
            return await self._sse(request, plan)
        return await read_answer(plan, live == "long-poll", request.headers.get("if-none-match"))

    async def _sse(self, request: Request[Any, Any, Any], plan: ReadPlan) -> Response[Any]:
        lease = ReaderLease(await plan.follow(await plan.start()), self.metrics)
        # However the request ends (the client may leave before the first frame), the
        # follow and its slot are given back (`release_on_exit` on the facade's route).
        register_release(request.scope, lease.release)
        headers = {"cache-control": "no-cache", "content-type": "text/event-stream"}
        if not wire.is_text(plan.entry.content_type):
            headers["stream-sse-data-encoding"] = "base64"
        return Stream(sse_frames(plan, lease.follow, lease.release), status_code=200,
                      headers=headers, media_type="text/event-stream")

    def _meta(self, entry: FacadeEntry, head: int, closed: bool) -> dict[str, str]:
        """PUT and HEAD also name the Runnel run that holds the stream (its stream id is
        `stream`), for the native API: legal hold, consumers, the viewer."""
        answer = {"content-type": entry.content_type, "stream-next-offset": wire.offset_of(head),
                  RUN_HEADER: entry.run_id}
        if closed:
            answer["stream-closed"] = "true"
        return answer

    @staticmethod
    def _closed(head: int) -> dict[str, str]:
        return {"stream-closed": "true", "stream-next-offset": wire.offset_of(head)}


def producer_headers(epoch: int, seq: int) -> dict[str, str]:
    return {"producer-epoch": str(epoch), "producer-seq": str(seq)}


def plain(status: int, message: str) -> Response[Any]:
    return Response(message, status_code=status, media_type="text/plain")


def facade_error(exc: Exception) -> Response[Any] | None:
    """The protocol's answer to a refusal; None: the error table's (problem+json, with its
    headers: `Retry-After` on 429 and 503, `WWW-Authenticate` on 401)."""
    if isinstance(exc, wire.BadRequest | ForkRefused):
        return plain(400, str(exc))
    if isinstance(exc, PathInUse):
        return plain(409, str(exc))
    if isinstance(exc, StreamGone):
        return plain(410, str(exc))
    if isinstance(exc, NotFound):
        return plain(404, "stream not found")
    return None


__all__ = ["Facade", "Principal", "facade_error"]
