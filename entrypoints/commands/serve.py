"""One serving process of `runnel serve`: the app on uvicorn with the bounded protocol
(ADR 0021), on a socket bound before anything boots.

Rules:
- the socket is bound before the database check, the embedded Postgres and the workers,
  so that a busy port is one line at once; it is inheritable, for `--processes N`;
- the banner comes once the app has started and the socket listens, from the process
  asked to print it (one of several: `processes.py`);
- shutdown: readiness off for the pre-stop delay, every subscription ended with a frame,
  then uvicorn's own shutdown (ADR 0029);
- forwarded headers count only from a trusted proxy's connection (ADR 0033);
- the host is checked before serving: unauthenticated facade requests bound to a tenant
  (conformance runs) are refused beyond loopback and warned about on it, and an open
  `/metrics` beyond loopback is warned about; warnings go to the log.
"""

from __future__ import annotations

import errno
import logging
import socket
from typing import TYPE_CHECKING

import uvicorn

from entrypoints.commands.banner import announce, is_loopback
from entrypoints.composition.settings import Settings
from entrypoints.observability.logging_setup import logging_config

if TYPE_CHECKING:
    from entrypoints.http.draining import Draining


class _Server(uvicorn.Server):
    """Uvicorn, announcing where to go once the app has started and the socket listens."""

    def __init__(self, config: uvicorn.Config, settings: Settings,
                 draining: Draining | None = None, banner: bool = True) -> None:
        super().__init__(config)
        self._settings = settings
        self._draining = draining
        self._banner = banner

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        """Readiness off for the pre-stop delay, every subscription ended with a frame,
        then uvicorn's own shutdown (ADR 0029)."""
        if self._draining is not None and self.started:
            await self._draining.drain(self._settings.prestop_seconds,
                                       self._settings.shutdown_grace_seconds)
        await super().shutdown(sockets)

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        if not self.started:
            return
        if not self._banner:
            return
        port = self.config.port
        for server in self.servers:
            for listening in server.sockets:
                port = listening.getsockname()[1]
        announce(self._settings, self.config.host, port)


def warn_durable_streams_binding(settings: Settings, host: str) -> None:
    from entrypoints.http.durable_streams import refuse_unsafe_binding

    warning = refuse_unsafe_binding(settings, host)  # ValueError off loopback
    if warning is not None:  # logged: a plain line would break a JSON log
        logging.getLogger("runnel.config").warning("%s", warning)


def warn_open_metrics(settings: Settings, host: str) -> None:
    from entrypoints.observability.metrics_access import MetricsAccess

    if settings.metrics_token is None and not is_loopback(host):
        logging.getLogger("runnel.config").warning(MetricsAccess.OPEN_WARNING.format(host=host))


def build_server(settings: Settings, host: str, port: int, access_log: bool,
                 banner: bool = True) -> uvicorn.Server:
    """One serving process: the app on uvicorn with the bounded protocol (ADR 0021)."""
    from entrypoints.composition.collector import tune_for_serving
    from entrypoints.http.app import create_asgi_app
    from entrypoints.http.bounded_protocol import bounded_protocol
    from entrypoints.http.connections import ConnectionBudget, connection_limits
    from entrypoints.http.draining import Draining
    from entrypoints.observability.tracing import start_tracing

    start_tracing(settings)
    budget = ConnectionBudget(connection_limits(settings))
    draining = Draining()
    config = uvicorn.Config(
        create_asgi_app(settings, budget, draining), host=host, port=port,
        lifespan="on",
        log_config=logging_config(settings), access_log=access_log,
        # Forwarded headers count only from a trusted proxy's connection (ADR 0033).
        proxy_headers=bool(settings.trusted_proxies),
        forwarded_allow_ips=list(settings.trusted_proxies),
        server_header=False, timeout_graceful_shutdown=int(settings.shutdown_grace_seconds),
        http=bounded_protocol(budget), ws="none",
        timeout_keep_alive=settings.idle_timeout_seconds,  # type: ignore[arg-type]
    )
    tune_for_serving()
    return _Server(config, settings, draining, banner)


def listening_socket(host: str, port: int) -> socket.socket:
    """The server's socket, bound before anything boots (the database check, the embedded
    Postgres, the workers), so that a busy port is one line at once; uvicorn listens on it.
    Raises `StartupRefused`."""
    from entrypoints.composition.startup import StartupRefused

    listening = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
    listening.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        listening.bind((host, port))
    except OSError as error:
        listening.close()
        if error.errno == errno.EADDRINUSE:
            raise StartupRefused(
                f"port {port} on {host} is already in use (another `runnel serve`?): stop "
                "that, or choose another port with --port N (--port 0 picks a free one)"
            ) from None
        raise StartupRefused(f"cannot listen on {host}:{port}: {error.strerror or error}"
                             ) from None
    listening.set_inheritable(True)
    return listening
