"""The start-up banner of `runnel serve`: where it listens, what it runs on, how to get a
token and a first request to try.

Rules:
- a dev token is printed only on a local default (embedded Postgres or memory), listening
  on loopback only, with the secret the server generated itself (ADR 0053); otherwise the
  banner says why not and how to mint one;
- with JSON logs the head of the banner is one log line (stdout is a log stream to a
  supervisor), and the whole banner is printed only when stdout is a terminal.
"""

from __future__ import annotations

import ipaddress
import logging
import shutil
import sys
from pathlib import Path

from application.views import API_PREFIX
from entrypoints.auth.tokens import ALGORITHM, mint_token
from entrypoints.composition.settings import Settings

DEV_TENANT = "dev"
DEV_SUBJECT = "developer"
DEV_SCOPES = ("streams:read", "streams:write")
DEV_TOKEN_TTL_SECONDS = 8 * 3600
LOOPBACK_NAMES = frozenset({"localhost"})
EXAMPLE_RUN = "demo"
EXAMPLE_DEFINITION = '{"stream_id":"answer","content_class":"output.text","consumers":["ui"]}'
"""What the banner's example creates: the README's first stream, so both can be run (an
identical definition is 200, not a conflict)."""


def announce(settings: Settings, host: str, port: int) -> None:
    """The banner on stdout; with JSON logs, one log line instead (stdout is a log stream
    to a supervisor) and the banner only when stdout is a terminal, a person reading it."""
    if settings.log_format != "json":
        print(_banner(settings, host, port), flush=True)
        return
    logging.getLogger("runnel.serve").info(
        "%s", "; ".join(line.strip() for line in _banner_head(settings, host, port)))
    if sys.stdout.isatty():
        print(_banner(settings, host, port), flush=True)


def _banner_head(settings: Settings, host: str, port: int) -> list[str]:
    """Where it listens and what it runs on: no token, no example. Each line says what its
    concept is before it says what this node does with it."""
    url = f"http://{host}:{port}"
    storage = ("in memory (nothing survives exit)" if settings.storage == "memory"
               else "Postgres at RUNNEL_DATABASE_URL" if settings.database_url
               else f"embedded Postgres under {settings.data_dir.resolve()} "
                    "(its own log: postgres.log there)")
    return [
        f"Runnel listening on {url}",
        f"  storage:   {storage}",
        f"  region:    {settings.region} (RUNNEL_REGION): a stream created without a "
        "`placement` keeps its data in this region",
        "  inputs:    records of input streams go to your workflow engine through a wait "
        f"service (RUNNEL_WAIT_SERVICE): {_inputs(settings)}"
        + ("" if settings.workers else " (this process runs no workers: `runnel worker` "
           "delivers with its own RUNNEL_WAIT_SERVICE)"),
        f"  API docs:  {url}/schema  (self-contained; OpenAPI: {url}/schema/openapi.json)",
    ]


def _banner(settings: Settings, host: str, port: int) -> str:
    url = f"http://{host}:{port}"
    return "\n".join([
        *_banner_head(settings, host, port),
        *_token_lines(settings, host),
        f"  try it:    create stream 'answer' in run {EXAMPLE_RUN!r}, content class "
        f"output.text (what its records are), consumer 'ui' (then: README, A first stream; "
        f"the console at {url}/)",
        f'  curl -s -H "Authorization: Bearer $RUNNEL_TOKEN" -H "content-type: application/json"'
        f" -d '{EXAMPLE_DEFINITION}' {url}{API_PREFIX}/runs/{EXAMPLE_RUN}/streams",
    ])


def command_name() -> str:
    """How to type this `runnel` here: `runnel` when that is on PATH, else its script's path,
    relative to the working directory when inside it (`.venv/bin/runnel` in a checkout)."""
    script = Path(sys.executable).parent / "runnel"
    on_path = shutil.which("runnel")
    if on_path is not None and Path(on_path).resolve() == script.resolve():
        return "runnel"
    try:
        return str(script.relative_to(Path.cwd()))
    except ValueError:
        return str(script)


def is_local_default(settings: Settings) -> bool:
    """The embedded default (no database configured) or the in-memory simulation: a
    single-machine setup whose data only its own user reaches."""
    return settings.storage == "memory" or not settings.database_url


def _no_dev_token_because(settings: Settings, host: str) -> str | None:
    """Why `serve` prints no dev token, or None: it prints one only on a local default,
    listening on loopback only, with the secret it generated itself (ADR 0053)."""
    if not is_local_default(settings):
        return "a configured database"
    if not is_loopback(host):
        return f"listening on {host}, not on loopback only"
    if settings.jwt_secret is not None:
        return "RUNNEL_JWT_SECRET is set"
    return None


def is_loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host in LOOPBACK_NAMES


def _token_lines(settings: Settings, host: str) -> list[str]:
    if ALGORITHM not in settings.token_algorithms():
        return ["  tokens:    this server accepts only "
                f"{', '.join(settings.token_algorithms())} tokens: mint them with the issuer "
                "of its JWKS"]
    reason = _no_dev_token_because(settings, host)
    if reason is not None:
        return [f"  tokens:    none printed ({reason}); mint one per client:",
                f"  export RUNNEL_TOKEN=$({command_name()} token --tenant {DEV_TENANT} "
                "--sub alice --scopes streams:read,streams:write --ttl 3600)"]
    ttl = min(DEV_TOKEN_TTL_SECONDS, settings.max_token_lifetime_seconds)
    token = mint_token(settings.resolved_jwt_secret(), tenant=DEV_TENANT, sub=DEV_SUBJECT,
                       scopes=DEV_SCOPES, ttl_seconds=ttl, issuer=settings.jwt_issuer,
                       audience=settings.jwt_audience)
    valid = f"{ttl // 3600} h" if ttl >= 3600 else f"{ttl} s"
    return [f"  dev token: tenant {DEV_TENANT!r}, sub {DEV_SUBJECT!r}, scopes "
            f"{', '.join(DEV_SCOPES)}, valid {valid} (local default on loopback only)",
            f"  export RUNNEL_TOKEN={token}"]


def _inputs(settings: Settings) -> str:
    """What happens to input records, by `RUNNEL_WAIT_SERVICE` (ADR 0014)."""
    kind = settings.wait_service_kind()
    if kind == "webhook":
        return (f"the webhook at {settings.webhook_url}, signed with RUNNEL_WEBHOOK_SECRET "
                "(2xx = delivered)")
    if kind == "dbos":
        return ("each run's DBOS workflow (topic: the stream id; delivered once committed "
                "in the DBOS system database)")
    if kind == "notify":
        return (f"NOTIFY on {settings.notify_channel!r} (only sessions listening at that "
                "moment receive them)")
    if kind == "memory":
        return "none: they are kept in this process (RUNNEL_STORAGE=memory)"
    return ("none is set (webhook, dbos or notify), so they stay pending "
            "(see status.pending_inputs)")


