"""The Postgres wake bus: ONE dedicated LISTEN connection per process.

Rules:
- whatever the number of local readers, the process holds one LISTEN
  connection (channels `runnel_wake` and `runnel_live`) and fans every
  notification out through a `FanoutHub`;
- this process's own commits reach its readers directly (right after the
  COMMIT, as with the memory bus); its listener skips wakes of its own origin,
  so each wake arrives once. A wake that says closed is the exception: with a
  listener, it reaches local readers through it, like every other process's
  (see the last rule);
- the connection is heart-beaten (`SELECT 1` under a timeout: a half-open TCP
  connection raises nothing by itself) and re-established with backoff when it
  fails or the server ends it; after every (re)connect, once LISTEN is active
  again, every local reader is told to re-read from its cursor
  (`hub.reset_all()`), so notifications lost meanwhile delay but never lose;
- other channels may be heard as doorbells (`doorbells`: channel → ring): each NOTIFY on
  one calls its ring, and so does every (re)connect, since some may have been missed;
- wakes are only hints: the store sends them with its commit, never before;
- live chunks are best effort: `publish_live` enqueues them (bounded, dropping
  when full); a sender task numbers and NOTIFYs them in batches, one transaction
  each (`live_sender.py`, `live_seq.py`), so a producer never fails because of
  readers or the database; `publish_live` returns once its chunks' transaction has
  committed (or failed, and they are dropped), one future per call, never a timer;
- live chunks reach every reader, local ones too, through the listener, in
  commit order: that is the order of their `seq` (ADR 0017). A local delivery
  after our COMMIT could overtake, or be overtaken by, another node's later
  chunk. A process without a listener hands its own chunks to its readers
  after the COMMIT (nobody else's reach it anyway);
- close after live (ADR 0056): Postgres delivers the NOTIFYs of both channels to a
  listener in one commit order, so a chunk whose `publish_live` returned (committed)
  before a close committed, on any process, reaches each listener before that close's
  wake, and a chunk committed after it comes after it. That holds only for what
  travels the listener: hence closing wakes do not take the direct path.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import asyncpg

from adapters.fanout import FanoutHub
from adapters.postgres.live_sender import LiveCounts, LiveSender
from adapters.postgres.notifications import (
    LIVE_CHANNEL,
    WAKE_CHANNEL,
    decode_live,
    decode_wake,
    split_payload,
)
from application.ports.waking import LiveChunk, LiveDraft, Wake, WakeSubscription
from domain.identifiers import StreamKey

log = logging.getLogger(__name__)

LISTEN_APPLICATION_NAME = "runnel-listen"
"""How the LISTEN connection shows in `pg_stat_activity`."""


@dataclass(frozen=True)
class ListenSettings:
    heartbeat_seconds: float = 5.0
    heartbeat_timeout_seconds: float = 5.0
    connect_timeout_seconds: float = 10.0
    first_backoff_seconds: float = 0.05
    max_backoff_seconds: float = 5.0
    live_queue_limit: int = 10_000
    live_batch: int = 500


@dataclass
class BusStats:
    notifications: int = 0
    undecodable: int = 0
    live: LiveCounts = field(default_factory=LiveCounts)

    @property
    def live_dropped(self) -> int:
        return self.live.dropped


class PostgresWakeBus:
    """Implements `WakeBus` over LISTEN/NOTIFY."""

    def __init__(self, dsn: str, pool: asyncpg.Pool, settings: ListenSettings | None = None,
                 doorbells: Mapping[str, Callable[[], None]] | None = None) -> None:
        self.hub = FanoutHub()
        self.origin = uuid.uuid4().hex[:12]
        """Names this process in NOTIFY payloads, so it can skip its own."""
        self.stats = BusStats()
        self.reconnects = 0
        """How many times the LISTEN connection was re-established after a loss."""
        self._dsn = dsn
        self._pool = pool
        self._settings = settings or ListenSettings()
        self._doorbells = dict(doorbells or {})
        self._connection: asyncpg.Connection | None = None
        self._listening = asyncio.Event()
        self._lost = asyncio.Event()
        self._supervisor: asyncio.Task[None] | None = None
        self._live = LiveSender(pool, self.origin, self._settings.live_queue_limit,
                                self._settings.live_batch, self.stats.live, self._sent_unheard)

    # -- lifecycle -------------------------------------------------------

    async def start(self, listen: bool = True, wait_seconds: float = 30.0) -> None:
        """Start sending live chunks and, with `listen`, listening; returns once LISTEN
        is active, so a subscription made after this call is woken by every later commit.
        Without `listen` nothing reaches local readers (for write-only processes)."""
        self._live.start()
        if listen:
            self._supervisor = asyncio.create_task(self._supervise(), name="runnel-listen")
            await asyncio.wait_for(self._listening.wait(), wait_seconds)

    async def close(self) -> None:
        if self._supervisor is not None:
            self._supervisor.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._supervisor
        self._supervisor = None
        await self._live.close()
        await self._drop_connection()

    @property
    def listen_connections(self) -> int:
        """LISTEN connections this process holds right now (0 or 1)."""
        connection = self._connection
        return 1 if connection is not None and not connection.is_closed() else 0

    @property
    def listener_pid(self) -> int | None:
        """Server process id of the LISTEN connection (for operators and fault tests)."""
        connection = self._connection
        return connection.get_server_pid() if connection is not None else None

    # -- WakeBus ---------------------------------------------------------

    @asynccontextmanager
    async def subscribe(self, key: StreamKey, live: bool = False
                        ) -> AsyncIterator[WakeSubscription]:
        async with self.hub.subscribe(key, live) as subscription:
            yield subscription

    async def publish_live(self, drafts: Sequence[LiveDraft]) -> None:
        await self._live.publish(drafts)

    def deliver_committed(self, wakes: Sequence[Wake]) -> None:
        """Called by the store right after a COMMIT, for this process's readers; with a
        listener, a wake that says closed comes through it instead (ADR 0056)."""
        listening = self._supervisor is not None
        for wake in wakes:
            if not (listening and wake.closed):
                self.hub.deliver_wake(wake)

    # -- listening -------------------------------------------------------

    async def _supervise(self) -> None:
        settings = self._settings
        backoff = settings.first_backoff_seconds
        connected_before = False
        while True:
            try:
                await self._listen()
                if connected_before:
                    self.reconnects += 1
                connected_before = True
                # LISTEN is active again: anything committed from here on wakes us;
                # whatever was committed while we were away, readers re-read.
                self.hub.reset_all()
                for ring in self._doorbells.values():
                    ring()
                self._listening.set()
                backoff = settings.first_backoff_seconds
                await self._heartbeat()
            except asyncio.CancelledError:
                raise
            except Exception as error:
                log.warning("LISTEN connection lost: %r; reconnecting in %.2fs", error, backoff)
            finally:
                self._listening.clear()
                await self._drop_connection()
            await asyncio.sleep(backoff)
            backoff = min(backoff * 2, settings.max_backoff_seconds)

    async def _listen(self) -> None:
        self._lost.clear()
        connection = await asyncpg.connect(
            self._dsn, timeout=self._settings.connect_timeout_seconds,
            server_settings={"application_name": LISTEN_APPLICATION_NAME})
        self._connection = connection
        connection.add_termination_listener(self._on_terminated)
        await connection.add_listener(WAKE_CHANNEL, self._on_wake)
        await connection.add_listener(LIVE_CHANNEL, self._on_live)
        for channel, ring in self._doorbells.items():
            await connection.add_listener(channel, _ringer(ring))

    async def _heartbeat(self) -> None:
        """Returns (raising) only when the connection is gone or does not answer."""
        settings = self._settings
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._lost.wait(), settings.heartbeat_seconds)
            connection = self._connection
            if self._lost.is_set() or connection is None or connection.is_closed():
                raise ConnectionError("LISTEN connection was closed")
            await asyncio.wait_for(connection.fetchval("SELECT 1"),
                                   settings.heartbeat_timeout_seconds)

    def _on_terminated(self, _connection: Any) -> None:
        self._lost.set()

    async def _drop_connection(self) -> None:
        connection, self._connection = self._connection, None
        if connection is not None and not connection.is_closed():
            # terminate(), not close(): close() waits for the server, which may be gone.
            connection.terminate()

    def _on_wake(self, _connection: Any, _pid: int, _channel: str, payload: str) -> None:
        self._dispatch(payload, lambda key, body: self.hub.deliver_wake(decode_wake(key, body)),
                       skip_own=True)

    def _on_live(self, _connection: Any, _pid: int, _channel: str, payload: str) -> None:
        self._dispatch(payload, lambda key, body: self.hub.deliver_live(decode_live(key, body)),
                       skip_own=False)

    def _dispatch(self, payload: str, deliver: Callable[[StreamKey, str], None],
                  skip_own: bool) -> None:
        """Hand a notification to this process's readers of its stream; our own wakes
        were already delivered straight after commit, and nobody listening costs no
        decode."""
        self.stats.notifications += 1
        try:
            origin, channel_key, body = split_payload(payload)
            if skip_own and origin == self.origin:
                return
            key = StreamKey.from_channel_key(channel_key)
            if self.hub.has_readers(key):
                deliver(key, body)
        except Exception:  # a malformed payload must not kill the listener
            self.stats.undecodable += 1
            log.exception("undecodable notification payload")

    # -- sending live chunks ---------------------------------------------

    def _sent_unheard(self, chunks: Sequence[LiveChunk]) -> None:
        """Without a listener, this process's own chunks reach its readers after the
        COMMIT (nobody else's reach it anyway); with one, they come through it."""
        if self._supervisor is None:
            for chunk in chunks:
                self.hub.deliver_live(chunk)


def _ringer(ring: Callable[[], None]) -> Callable[[Any, int, str, str], None]:
    def on_notify(_connection: Any, _pid: int, _channel: str, _payload: str) -> None:
        try:
            ring()
        except Exception:  # a doorbell must not kill the listener
            log.exception("doorbell ring failed")

    return on_notify
