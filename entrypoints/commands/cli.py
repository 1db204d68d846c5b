"""The `runnel` command: serve, worker, config, migrate, fence, unfence, token, revoke, tail,
log-id, deliveries, version; the parser, and what each command's arguments call.

Rules:
- configuration comes from `RUNNEL_*` environment variables (see
  `entrypoints.composition.settings`); flags only choose what this invocation does;
- each command's work lives in its own module (`serve.py`, `processes.py`, `fence.py`, …),
  imported when the command runs, so a short command loads no server;
- a refusal at start-up (`StartupRefused`, an invalid setting, an unsafe data directory) is
  one line on stderr naming the command, and exit status 2, without a traceback;
- unknown `RUNNEL_*` variables are warned about: in the log for the commands that log
  (`LOGGING_COMMANDS`), else on stderr.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys
from collections.abc import Callable
from importlib.metadata import version
from typing import Any

from pydantic import ValidationError

from adapters.fs.data_dir import UnsafeDataDir
from entrypoints.commands.fence import region_name
from entrypoints.commands.token import TokenRefused, server_secret, token_command
from entrypoints.composition.settings import ConfigurationError, Settings
from entrypoints.observability.log_ids import LogIds
from entrypoints.observability.logging_setup import configure_logging


def _version(_: argparse.Namespace) -> int:
    print(version("runnel"))
    return 0


def _serve(args: argparse.Namespace) -> int:
    from entrypoints.commands.processes import ServeArgs, run
    from entrypoints.commands.serve import (
        build_server,
        listening_socket,
        warn_durable_streams_binding,
        warn_open_metrics,
    )

    settings = Settings(workers=False) if args.no_workers else Settings()
    count = settings.serve_processes(args.processes)
    listening = listening_socket(args.host, args.port)
    _preflight(settings)
    warn_durable_streams_binding(settings, args.host)
    warn_open_metrics(settings, args.host)
    if count == 1:
        build_server(settings, args.host, args.port, args.access_log).run(sockets=[listening])
        return 0
    return run(ServeArgs(args.host, args.access_log, settings.workers,
                         settings.prestop_seconds + settings.shutdown_grace_seconds + 10),
               listening, count)


def _worker(_: argparse.Namespace) -> int:
    from entrypoints.commands.worker import run
    from entrypoints.observability.tracing import start_tracing

    settings = Settings()
    _preflight(settings)
    start_tracing(settings)
    run(settings)
    return 0


def _preflight(settings: Settings) -> None:
    """Wait for the database and check its schema before the node starts (`startup.py`)."""
    from entrypoints.composition.startup import preflight

    asyncio.run(preflight(settings))


def _config(_: argparse.Namespace) -> int:
    from entrypoints.commands.config import config_rows, render

    print(render(config_rows(Settings())))
    return 0


def _migrate(_: argparse.Namespace) -> int:
    from entrypoints.commands.migrate import migrate_command

    return migrate_command(Settings())


def _fence(args: argparse.Namespace) -> int:
    from entrypoints.commands.fence import fence_command

    return fence_command(Settings(), args.command, args.region)


def _positive(value: str) -> int:
    if not value.isdigit() or int(value) < 1:
        raise argparse.ArgumentTypeError(f"not a positive whole number: {value!r}")
    return int(value)


def _token(args: argparse.Namespace) -> int:
    return token_command(Settings(), args.tenant, args.sub, args.scopes, args.runs, args.ttl)


def _revoke(args: argparse.Namespace) -> int:
    from entrypoints.commands.revoke import revoke

    return revoke(Settings(), args.jti, args.tenant, args.expires_at)


def _log_id(args: argparse.Namespace) -> int:
    try:  # the server's own secret: pseudonyms of another would match no log line
        ids = LogIds(server_secret(Settings()))
    except TokenRefused as refused:
        print(f"runnel log-id: {refused}", file=sys.stderr)
        return 2
    print(" ".join(ids.pseudonym(identifier) for identifier in (args.run, args.stream)
                   if identifier is not None))
    return 0


def _tail(args: argparse.Namespace) -> int:
    from entrypoints.commands.tail import tail

    if not args.token:
        print("runnel tail: no token (--token or RUNNEL_TOKEN)", file=sys.stderr)
        return 2
    return tail(args.url, args.token, args.run, args.stream, args.after, args.live)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="runnel", description="Durable work-data streams for workflow runs.")
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("version", help="print the installed version").set_defaults(
        handler=_version)

    serve = commands.add_parser("serve", help="run the HTTP API (and the workers)")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=8080, help="0 picks a free port")
    serve.add_argument("--no-workers", action="store_true",
                       help="API only (for extra replicas; workers run elsewhere)")
    serve.add_argument("--access-log", action="store_true", help="log every request")
    serve.add_argument("--processes", type=_positive, default=None,
                       help="API processes on the one port (default RUNNEL_PROCESSES: the "
                            "number of cores on a configured database, 1 on the local default)")
    serve.set_defaults(handler=_serve)

    commands.add_parser("worker", help="run only the background workers").set_defaults(
        handler=_worker)

    commands.add_parser("config", help="list every setting, its default and its source"
                        ).set_defaults(handler=_config)
    commands.add_parser("migrate", help="apply database migrations").set_defaults(
        handler=_migrate)

    fence = commands.add_parser(
        "fence", help="stop every write of a region's nodes (after failing over away from it)")
    fence.add_argument("region", type=region_name)
    fence.set_defaults(handler=_fence)
    unfence = commands.add_parser("unfence", help="let a fenced region's nodes write again")
    unfence.add_argument("region", type=region_name)
    unfence.set_defaults(handler=_fence)

    token = commands.add_parser(
        "token", help="mint a bearer token with the server's secret (RUNNEL_JWT_SECRET, "
                      "else RUNNEL_DATA_DIR/jwt-secret; never creates one)")
    token.add_argument("--tenant", required=True)
    token.add_argument("--sub", required=True)
    token.add_argument("--scopes", required=True,
                       help="comma-separated, of streams:read, streams:write, streams:admin")
    token.add_argument("--runs", help="comma-separated run ids the token is bound to")
    token.add_argument("--ttl", type=int, default=3600, help="seconds until expiry")
    token.set_defaults(handler=_token)

    revoke = commands.add_parser(
        "revoke", help="refuse a token by its jti on every node (within seconds)")
    revoke.add_argument("jti", help="the token's jti claim")
    revoke.add_argument("--tenant", help="only the token of this tenant (default: any tenant)")
    revoke.add_argument("--expires-at", metavar="ISO-8601",
                        help="when the token expires anyway, e.g. 2026-12-01T18:00:00Z "
                             "(default: now + RUNNEL_MAX_TOKEN_LIFETIME_SECONDS)")
    revoke.set_defaults(handler=_revoke)

    log_id = commands.add_parser("log-id", help="print the pseudonyms logs use for ids")
    log_id.add_argument("run")
    log_id.add_argument("stream", nargs="?")
    log_id.set_defaults(handler=_log_id)

    tail = commands.add_parser("tail", help="follow a stream in the terminal")
    tail.add_argument("run")
    tail.add_argument("stream")
    tail.add_argument("--after", type=int, default=0, help="start after this sequence")
    tail.add_argument("--live", action="store_true", help="also show live chunks")
    tail.add_argument("--url", default=os.environ.get("RUNNEL_URL", "http://127.0.0.1:8080"),
                      help="the server's base URL (default: $RUNNEL_URL, else http://127.0.0.1:8080)")
    tail.add_argument("--token", default=os.environ.get("RUNNEL_TOKEN"),
                      help="bearer token (default: $RUNNEL_TOKEN)")
    tail.set_defaults(handler=_tail)

    from entrypoints.commands.deliveries import add_deliveries_command

    add_deliveries_command(commands)
    return parser


LOGGING_COMMANDS = frozenset({"serve", "worker", "migrate", "fence", "unfence", "revoke"})
"""The commands that run against a node's database and log through `logging_setup.py`."""


def _warnings_of(command: str) -> Callable[[str], None]:
    """Where a start-up warning goes: the log, for a command that logs (set up here, before
    anything else is said), else stderr."""
    if command not in LOGGING_COMMANDS:
        return lambda warning: print(f"runnel {command}: warning: {warning}", file=sys.stderr)
    configure_logging(Settings())
    log = logging.getLogger("runnel.config")
    return lambda warning: log.warning("%s", warning)


def main(argv: list[str] | None = None) -> int:
    from entrypoints.composition.startup import StartupRefused, unknown_variables

    args = build_parser().parse_args(argv)
    try:
        warn = _warnings_of(args.command)
        for warning in unknown_variables(os.environ):
            warn(warning)
        return int(args.handler(args))
    except StartupRefused as refused:
        print(f"runnel {args.command}: {refused}", file=sys.stderr)
        return 2
    except ValidationError as error:  # a RUNNEL_* variable: say which, without a traceback
        problems = [_setting_problem(problem) for problem in error.errors()]
        if len(problems) == 1:
            print(f"runnel {args.command}: invalid configuration: {problems[0]}",
                  file=sys.stderr)
            return 2
        print(f"runnel {args.command}: invalid configuration", file=sys.stderr)
        for line in problems:
            print(f"  {line}", file=sys.stderr)
        return 2
    except ConfigurationError as error:
        print(f"runnel {args.command}: invalid configuration: {error}", file=sys.stderr)
        return 2
    except UnsafeDataDir as unsafe:  # the embedded default's, with a secret configured
        print(f"runnel {args.command}: RUNNEL_DATA_DIR: {unsafe}", file=sys.stderr)
        return 2


def _setting_problem(problem: Any) -> str:
    where = ".".join(str(part) for part in problem["loc"])
    name = f"RUNNEL_{where.upper()}: " if where else ""
    return name + str(problem["msg"]).removeprefix("Value error, ")
