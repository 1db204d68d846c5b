"""Node configuration from `RUNNEL_*` environment variables (pydantic-settings).

Every knob a deployment turns lives here, with the default that makes a fresh
checkout work: no database URL means an embedded Postgres under `DATA_DIR`,
no JWT secret means one generated once and kept in `DATA_DIR/jwt-secret`, so
`runnel token` and `runnel serve` on the same machine agree without setup.
"""

from __future__ import annotations

import json
import os
import secrets
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict
from runnel_client.webhooks import webhook_key

from adapters.fs.data_dir import UnsafeDataDir, private_directory
from adapters.postgres.pool import DatabaseBounds
from application.durable_streams.definition import ANY_TENANT, check_fields, facade_definition
from application.maintenance import UpkeepSettings
from application.node import NodeSettings
from domain.credit_ceilings import INT64_MAX, CreditCeilings
from domain.definition import build_definition
from domain.errors import DomainError
from domain.identifiers import validate_id
from domain.pins import MAX_OPEN_OBJECTS_CEILING, MAX_UNREAD_ITEMS_CEILING
from domain.principal import Principal
from entrypoints.auth.trusted_proxies import parse_networks
from entrypoints.composition.origins import parse_origins

JWT_SECRET_FILE = "jwt-secret"
MIN_WEBHOOK_KEY_BYTES = 32
MIN_JWT_SECRET_BYTES = 32
"""HS256 keys shorter than this are guessable offline from one token (RFC 7518 §3.2)."""


class ConfigurationError(ValueError):
    """A setting that cannot work, found after the settings were read (the CLI prints the
    message as one line and exits 2)."""


class S3RegionSettings(BaseModel):
    """One region's bucket in `RUNNEL_S3_REGIONS` (`{region: {bucket, endpoint_url, …}}`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    bucket: str = Field(min_length=3, max_length=63)
    endpoint_url: str | None = None
    access_key: str | None = None
    secret_key: SecretStr | None = None
    region_name: str = "us-east-1"
    addressing_style: Literal["auto", "path", "virtual"] = "auto"


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="RUNNEL_", extra="ignore", frozen=True,
                                      hide_input_in_errors=True)  # secrets stay out of errors

    database_url: str | None = None
    """Postgres DSN; unset → an embedded Postgres under `data_dir`."""
    listen_database_url: str | None = None
    """The DSN of the LISTEN connection, when it must differ from `database_url` (a
    transaction-pooling proxy such as pgbouncer cannot carry LISTEN); unset → the same."""
    storage: Literal["postgres", "memory"] = "postgres"
    """`memory` runs the whole service in this process (simulation; nothing survives exit)."""
    data_dir: Path = Path(".runnel")
    region: str = Field("local", pattern=r"^[A-Za-z0-9._:-]{1,128}$")
    jwt_secret: SecretStr | None = None
    """HS256 key for local use, at least 32 bytes; unset → one generated in `data_dir`."""
    jwt_algorithms: tuple[Literal["HS256", "RS256", "EdDSA"], ...] = ()
    """Token algorithms accepted (JSON list); empty → `["RS256", "EdDSA"]` with a JWKS,
    else `["HS256"]`. HS256 tokens are checked only with the secret, the others only
    with a key of the JWKS whose algorithm matches (ADR 0024)."""
    jwt_jwks_file: Path | None = None
    """A JWKS (JSON) with the public keys of the token issuer, read at start."""
    jwt_jwks_url: str | None = None
    """A JWKS URL, fetched at start and every `jwt_jwks_cache_seconds`, and again (at most
    once per `jwt_jwks_min_refresh_seconds`) when a token names an unknown `kid`."""
    jwt_jwks_cache_seconds: float = Field(300.0, gt=0)
    jwt_jwks_min_refresh_seconds: float = Field(10.0, gt=0)
    jwt_issuer: str | None = None
    """When set, every token must carry this `iss` (and `runnel token` sets it)."""
    jwt_audience: str | None = None
    """When set, every token must carry this `aud` (and `runnel token` sets it)."""
    max_token_lifetime_seconds: int = Field(24 * 3600, gt=0)
    """No token lives longer: `exp - iat` (or, without `iat`, `exp - now`) above it is 401,
    and `runnel token --ttl` refuses more."""
    revocation_refresh_seconds: float = Field(5.0, gt=0)
    """How often a node re-reads the revoked-token list (a NOTIFY makes it sooner)."""
    keepalive_seconds: float = Field(15.0, gt=0)
    sweep_seconds: float = Field(5.0, gt=0)
    sse_stall_seconds: float = Field(60.0, gt=0)
    """A subscriber taking no frame for this long is disconnected (it resumes losing nothing)."""
    sse_direct_writes: bool = True
    """A caught-up subscriber's frames are written to its connection from the publisher's
    call, without a turn of its own task (ADR 0079); off: every frame goes through it."""
    durable_streams_anonymous_tenant: str | None = Field(None, pattern=r"^[A-Za-z0-9._:-]{1,128}$")
    """For a conformance run only: requests without a token on the Durable Streams facade
    (`/v1/stream/…`, ADR 0041) act in this tenant. Off by default; `runnel serve` warns
    loudly when it is set and refuses it unless it listens on loopback."""
    durable_streams_long_poll_seconds: float = Field(20.0, gt=0)
    """How long a facade long-poll waits for data before answering 204."""
    durable_streams_templates: dict[str, dict[str, Any]] = Field(default_factory=dict)
    """Per tenant (`*`: every tenant not named), the definition fields a facade stream starts
    from, before its creator's `Runnel-Definition` (ADR 0070), e.g.
    `{"acme": {"authorization": {"readers": ["*"], "writers": ["*"]}}}`. Without a template,
    a facade stream's readers and writers are its creator alone."""
    max_subscriptions_per_principal: int = Field(100, gt=0)
    """Concurrent subscriptions of one principal, counted across every node on the database."""
    subscription_lease_seconds: float = Field(60.0, gt=0)
    """How long a subscription slot outlives its node's last renewal: the slots of a node that
    died are free again after this long (ADR 0018)."""
    max_body_bytes: int = Field(64 * 1024, gt=0)
    """Request body ceiling for every route except append."""
    max_append_body_bytes: int = Field(8 * 1024 * 1024, gt=0)
    """Request body ceiling for a batch append (each inline record is ≤ 64 KiB on its own)."""
    max_header_bytes: int = Field(8 * 1024, ge=1024)
    """Total request-header ceiling checked by the app (431); the HTTP parser refuses twice this."""
    db_statement_timeout_seconds: float = Field(15.0, gt=0)
    """The longest a statement may run (server-side `statement_timeout`; the client gives up
    2 s later on a server that does not answer at all)."""
    db_acquire_timeout_seconds: float = Field(5.0, gt=0)
    """The longest a request waits for a pool connection."""
    db_connect_timeout_seconds: float = Field(5.0, gt=0)
    db_idle_in_transaction_seconds: float = Field(30.0, gt=0)
    """The server ends a session idle inside a transaction after this long (its locks go)."""
    db_request_budget_seconds: float = Field(8.0, gt=0)
    """The longest an append waits on the database, all its waits together (a connection,
    its statements, its place in a group commit, the commit); past it, 503
    `store_unavailable`, retry with the same idempotency keys (ADR 0059)."""
    db_keepalive_seconds: float = Field(10.0, ge=1)
    """TCP keepalive idle time, both ways; a silent peer is given up after about twice it."""
    env: Literal["development", "production"] = "development"
    """`production` refuses to start on the defaults made for a laptop: it needs an explicit
    `RUNNEL_DATABASE_URL` and `RUNNEL_JWT_SECRET`."""
    startup_timeout_seconds: float = Field(30.0, ge=0)
    """How long a starting node waits, retrying, for a configured database to answer."""
    db_pool_size: int = Field(10, ge=1)
    """Connections in the node's pool (the LISTEN connection is one more)."""
    db_commit_connections: int = Field(3, ge=1)
    """Group-commit transactions in flight at once; the pool keeps two more for reads."""
    prestop_seconds: float = Field(0.0, ge=0)
    """On SIGTERM, how long `/readyz` is 503 while the node still serves, before its
    subscriptions are ended: set it to what your balancer needs to notice (ADR 0029)."""
    shutdown_grace_seconds: float = Field(5.0, gt=0)
    """On SIGTERM, how long ended subscriptions and open requests get to finish before
    the rest is cut."""
    auto_migrate: bool = True
    """Apply pending migrations when a node starts. `false` makes `runnel migrate` a deploy
    step of its own: a node then refuses to start unless the database is exactly at its
    schema (docs/adr/0027)."""
    max_connections: int = Field(1000, gt=0)
    """Open request connections on this node (event streams have their own cap); one more is
    answered 503 `too_many_connections` and closed (ADR 0021)."""
    max_connections_per_address: int = Field(100, gt=0)
    """Open request connections from one client address. Behind a proxy every connection has
    the proxy's address: raise it to the proxy's upstream connection count (ADR 0021)."""
    trusted_proxies: Annotated[tuple[str, ...], NoDecode] = ()
    """Reverse proxies in front of this node: addresses or networks, comma-separated or a
    JSON list (`10.0.0.5,10.1.0.0/16`). A connection from one is held to `max_connections` only,
    not to `max_connections_per_address`, and its `X-Forwarded-For` names the client. Empty:
    nobody is trusted and forwarded headers are ignored (ADR 0033)."""
    cors_origins: Annotated[tuple[str, ...], NoDecode] = ()
    """Origins whose browser pages may call this node (the native API and the Durable
    Streams facade), comma-separated or a JSON list: `https://app.example.com`, each
    `scheme://host[:port]`, no path, no `*`. Empty: no cross-origin access (ADR 0062)."""
    cors_max_age_seconds: int = Field(600, ge=0, le=86400)
    """How long a browser may keep a preflight answer (browsers cap it: Chromium at 7200)."""
    max_sse_connections: int = Field(2000, gt=0)
    """Open event streams (subscriptions) on this node, outside `max_connections`."""
    header_timeout_seconds: float = Field(10.0, gt=0)
    """From a connection's opening (or the first byte of its next request) to the end of the
    request's headers; past it the connection is closed (408)."""
    body_timeout_seconds: float = Field(10.0, gt=0)
    """Grace for a request body: it must be complete within this plus one second per
    `min_body_bytes_per_second` bytes received (408 and close otherwise)."""
    min_body_bytes_per_second: int = Field(1024, gt=0)
    """The slowest request body accepted, on average, once the grace is spent."""
    idle_timeout_seconds: float = Field(20.0, gt=0)
    """A kept-alive connection with no new request for this long is closed. Keep it above
    the idle timeout of a proxy in front (ADR 0021)."""
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"] = "INFO"
    """The lowest level logged, for every logger of the process (ADR 0031)."""
    log_format: Literal["text", "json"] = "text"
    """`text`: timestamped lines; `json`: one object per line with `ts`, `level`, `logger`,
    `message` and, in a request, `request_id`, `tenant`, `route`, `status`, `duration_ms`."""
    otel: bool = False
    """OpenTelemetry tracing (the `otel` extra); also on when a standard `OTEL_TRACES_EXPORTER`
    or `OTEL_EXPORTER_OTLP_ENDPOINT` is set (ADR 0031)."""
    workers: bool = True
    """Run the background workers in the API process (`runnel serve --no-workers` turns it off)."""
    processes: int | None = Field(None, ge=1, le=256)
    """API processes `runnel serve` runs on its one port (ADR 0045); unset: the number of
    cores on a configured database, 1 on the local default (embedded or memory), whose
    state lives in one process."""
    worker_metrics_port: int = Field(9464, ge=0, le=65535)
    """`runnel worker` serves /metrics and /healthz on this port; 0 turns it off (`runnel
    serve` has its own /metrics)."""
    worker_metrics_host: str = "127.0.0.1"
    """The address of `runnel worker`'s metrics port (`0.0.0.0` for a scraper elsewhere)."""
    metrics_token: SecretStr | None = None
    """The bearer token `/metrics` on the API port takes, at least 32 bytes; unset: that
    route answers nobody (ADR 0061). `runnel worker`'s metrics port, an operator address of
    its own, takes no token."""
    metrics_store_figures: bool = True
    """Read the whole store's outbox backlogs and consumer lag at each scrape (one query,
    whose cost grows with the consumers: ADR 0030). Every node reports the same figures:
    on a large store, keep this on for one or two nodes only."""
    wait_service: Literal["none", "webhook", "notify", "memory", "dbos"] | None = None
    """Where input events go: `webhook` POSTs each to `webhook_url` (delivered: the receiver
    answered 2xx); `dbos` sends each to the run's DBOS workflow through the DBOS system
    database at `dbos_database_url` (delivered: the message committed there, ADR 0043);
    `notify` sends each as a Postgres NOTIFY on `notify_channel` (published:
    only sessions listening at commit get it); `none` delivers nothing, input records stay
    pending until a node with a wait service takes them; `memory` keeps them in this
    process (`storage=memory` only). Unset → `memory` with `storage=memory`, else `none`
    (ADR 0014)."""
    webhook_url: str | None = None
    webhook_secret: SecretStr | None = None
    """The key every webhook is signed with (HMAC-SHA256, Standard Webhooks): at least
    32 bytes, `whsec_<base64>` or plain text; required with `wait_service=webhook`
    (ADR 0022)."""
    dbos_database_url: SecretStr | None = None
    """The DBOS system database (`postgresql://…`; it may be Runnel's own Postgres server),
    required with `wait_service=dbos`; DBOS's own migrations must have made it."""
    notify_channel: str = Field("runnel_input_events", pattern=r"^[a-z_][a-z0-9_]{0,62}$")
    delivery_lease_seconds: float = Field(30.0, gt=0)
    """How long a worker's claim on an outbox row lasts; a dead worker's rows are taken over
    after it (keep it well above one delivery's duration)."""
    delivery_max_attempts: int = Field(8, gt=0)
    """Failed deliveries of one input record before it is dead-lettered."""
    orphan_sweep_seconds: float = Field(3600.0, gt=0)
    """How often the orphan sweep lists every object body (a full bucket listing)."""
    orphan_grace_seconds: int = Field(3600, ge=0)
    """A body younger than this is never swept (an upload may not be recorded yet)."""
    # Storage upkeep, run by one process per region (ADR 0032).
    maintenance_seconds: float = Field(60.0, gt=0)
    """The pause between two upkeep passes of the region's leader."""
    event_audit_events: int = Field(1000, ge=0)
    """Events kept per stream (and per object intent) below its snapshot: the audit tail."""
    receipt_ttl_seconds: float = Field(7 * 24 * 3600.0, ge=0)
    """An idempotency receipt older than this goes, even if its record is retained; 0: never
    for age alone."""
    receipt_min_seconds: float = Field(3600.0, ge=0)
    """A receipt whose record retention pruned still answers its key for this long after
    the append (a retry whose answer was lost)."""
    delivery_keep_seconds: float = Field(24 * 3600.0, ge=0)
    """Delivered (finished) input-delivery rows older than this go; dead letters stay."""
    gap_evidence_keep_seconds: float = Field(7 * 24 * 3600.0, ge=0)
    """Gap evidence older than this goes."""
    object_store: Literal["fs", "s3", "memory"] | None = None
    """Where object bodies go; unset → `s3` when `s3_regions` is given, `memory` with
    `storage=memory`, else `fs` under `data_dir/objects`."""
    s3_regions: dict[str, S3RegionSettings] = Field(default_factory=dict)
    """JSON: one bucket per region, `{"eu": {"bucket": "…", "endpoint_url": "…", …}}`."""
    s3_connect_timeout_seconds: float = Field(5.0, gt=0)
    """The longest a connection to S3 may take to open, per attempt (ADR 0050)."""
    s3_read_timeout_seconds: float = Field(15.0, gt=0)
    """The longest S3 may stay silent on an open connection, per attempt (ADR 0050)."""
    s3_max_attempts: int = Field(3, ge=1)
    """Attempts of one S3 call in all; then it is 503 `object_store_unavailable`."""
    object_regions: tuple[str, ...] = ()
    """Regions the `fs`/`memory` store serves (JSON list); empty → the node's own region."""

    max_streams_per_run: int = Field(1000, gt=0)
    """Streams one run may hold; a create past it is 409 `too_many_streams` (counted under
    the run's lock, so it holds across nodes)."""
    # Ceilings on the credit pins a client may declare at creation (422 above them). Each
    # admits at least the default of its pin, so a definition without credit fits.
    max_unread_items_ceiling: int = Field(10_000_000, ge=1000, le=MAX_UNREAD_ITEMS_CEILING)
    max_unread_bytes_ceiling: int = Field(256 * 1024**2, ge=8 * 1024**2, le=INT64_MAX)
    max_total_items_ceiling: int = Field(10_000_000, ge=100_000, le=INT64_MAX)
    max_total_bytes_ceiling: int = Field(64 * 1024**3, ge=1024**3, le=INT64_MAX)
    max_open_objects_ceiling: int = Field(10_000, ge=100, le=MAX_OPEN_OBJECTS_CEILING)

    @field_validator("log_level", "log_format", mode="before")
    @classmethod
    def _any_case(cls, value: object, info: ValidationInfo) -> object:
        if not isinstance(value, str):
            return value
        return value.strip().upper() if info.field_name == "log_level" else value.strip().lower()

    @field_validator("jwt_secret")
    @classmethod
    def _secret_long_enough(cls, value: SecretStr | None) -> SecretStr | None:
        problem = None if value is None else secret_problem(value.get_secret_value())
        if problem is not None:
            raise ValueError(problem)
        return value

    @field_validator("metrics_token")
    @classmethod
    def _metrics_token_long_enough(cls, value: SecretStr | None) -> SecretStr | None:
        problem = None if value is None else secret_problem(value.get_secret_value())
        if problem is not None:
            raise ValueError(problem)
        return value

    @field_validator("trusted_proxies")
    @classmethod
    def _proxies_are_networks(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        return parse_networks(value)

    @field_validator("trusted_proxies", mode="before")
    @classmethod
    def _proxies_from_text(cls, value: object) -> object:
        if isinstance(value, str):
            text = value.strip()
            if text.startswith("["):
                return json.loads(text)
            return tuple(item for item in text.split(",") if item.strip())
        return value

    @field_validator("cors_origins", mode="before")
    @classmethod
    def _origins_from_text(cls, value: object) -> object:
        if isinstance(value, str):
            text = value.strip()
            return json.loads(text) if text.startswith("[") else tuple(text.split(","))
        return value

    @field_validator("cors_origins")
    @classmethod
    def _origins_are_origins(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        return parse_origins(value)

    @field_validator("wait_service", mode="before")
    @classmethod
    def _empty_is_unset(cls, value: object) -> object:
        return None if value == "" else value

    @field_validator("webhook_secret")
    @classmethod
    def _webhook_key_is_long_enough(cls, value: SecretStr | None) -> SecretStr | None:
        if value is not None and len(webhook_key(value.get_secret_value())) \
                < MIN_WEBHOOK_KEY_BYTES:
            raise ValueError(f"must be at least {MIN_WEBHOOK_KEY_BYTES} bytes (decoded, for "
                             "whsec_<base64>); generate one with: python -c \"import base64, "
                             "secrets; print('whsec_' + base64.b64encode(secrets.token_bytes"
                             "(32)).decode())\"")
        return value

    @model_validator(mode="after")
    def _production_is_explicit(self) -> Settings:
        if self.env == "production":
            missing = [name for name, value in (("RUNNEL_DATABASE_URL", self.database_url),
                                                ("RUNNEL_JWT_SECRET", self.jwt_secret))
                       if value is None]
            if self.storage != "postgres":
                missing.append("RUNNEL_STORAGE=postgres")
            if missing:
                raise ValueError("RUNNEL_ENV=production needs " + " and ".join(missing)
                                 + " set explicitly")
        return self

    @model_validator(mode="after")
    def _wait_service_fits(self) -> Settings:
        kind = self.wait_service_kind()
        if kind == "webhook" and not self.webhook_url:
            raise ValueError("RUNNEL_WAIT_SERVICE=webhook needs RUNNEL_WEBHOOK_URL")
        if kind == "webhook" and self.webhook_secret is None:
            raise ValueError("RUNNEL_WAIT_SERVICE=webhook needs RUNNEL_WEBHOOK_SECRET, the "
                             f"key its requests are signed with (at least "
                             f"{MIN_WEBHOOK_KEY_BYTES} bytes)")
        if kind == "dbos" and self.dbos_database_url is None:
            raise ValueError("RUNNEL_WAIT_SERVICE=dbos needs RUNNEL_DBOS_DATABASE_URL, the DBOS "
                             "system database its workflows run on")
        if kind == "notify" and self.storage != "postgres":
            raise ValueError("RUNNEL_WAIT_SERVICE=notify needs RUNNEL_STORAGE=postgres")
        if kind == "memory" and self.storage != "memory":
            raise ValueError("RUNNEL_WAIT_SERVICE=memory needs RUNNEL_STORAGE=memory: input "
                             "records would be marked delivered into a list in one process; "
                             "use webhook or notify, or none to keep them pending")
        return self

    @model_validator(mode="after")
    def _token_keys_fit(self) -> Settings:
        if self.jwt_jwks_file is not None and self.jwt_jwks_url is not None:
            raise ValueError("set RUNNEL_JWT_JWKS_FILE or RUNNEL_JWT_JWKS_URL, not both")
        if self.jwt_jwks_url is not None and not self.jwt_jwks_url.startswith(
                ("https://", "http://")):
            raise ValueError("RUNNEL_JWT_JWKS_URL must be an http(s) URL")
        has_jwks = self.jwt_jwks_file is not None or self.jwt_jwks_url is not None
        if not has_jwks and set(self.token_algorithms()) - {"HS256"}:
            raise ValueError("RUNNEL_JWT_ALGORITHMS lists RS256 or EdDSA, which need "
                             "RUNNEL_JWT_JWKS_FILE or RUNNEL_JWT_JWKS_URL")
        return self

    @model_validator(mode="after")
    def _templates_are_definitions(self) -> Settings:
        templates = self.durable_streams_templates
        for tenant in templates:
            probe = Principal(sub="template-check", tenant=tenant, scopes=frozenset())
            try:
                if tenant != ANY_TENANT:
                    validate_id(tenant, "tenant")
                check_fields(templates[tenant], "a template")
                build_definition(facade_definition(probe, templates, None), self.region,
                                 self.node().credit_ceilings)
            except DomainError as error:
                raise ValueError(f"RUNNEL_DURABLE_STREAMS_TEMPLATES[{tenant!r}]: "
                                 f"{error.detail}") from None
        return self

    def token_algorithms(self) -> tuple[str, ...]:
        if self.jwt_algorithms:
            return tuple(dict.fromkeys(self.jwt_algorithms))
        if self.jwt_jwks_file is not None or self.jwt_jwks_url is not None:
            return ("RS256", "EdDSA")
        return ("HS256",)

    def serve_processes(self, requested: int | None = None) -> int:
        """How many processes `runnel serve` runs: `requested` (the flag), else
        `processes`, else the cores; 1 wherever state lives in the process."""
        wanted = requested or self.processes
        if self.storage == "memory" or not self.database_url:
            if wanted not in (None, 1):
                raise ConfigurationError("RUNNEL_PROCESSES > 1 needs RUNNEL_DATABASE_URL: the "
                                         "local default keeps its state in one process")
            return 1
        return wanted or os.cpu_count() or 1

    def wait_service_kind(self) -> Literal["none", "webhook", "notify", "memory", "dbos"]:
        if self.wait_service is not None:
            return self.wait_service
        return "memory" if self.storage == "memory" else "none"

    def object_store_kind(self) -> Literal["fs", "s3", "memory"]:
        if self.object_store is not None:
            if self.object_store == "s3" and not self.s3_regions:
                raise ValueError("RUNNEL_OBJECT_STORE=s3 needs RUNNEL_S3_REGIONS")
            return self.object_store
        if self.s3_regions:
            return "s3"
        return "memory" if self.storage == "memory" else "fs"

    def object_store_regions(self) -> tuple[str, ...]:
        if self.object_store_kind() == "s3":
            return tuple(self.s3_regions)
        return self.object_regions or (self.region,)

    def node(self) -> NodeSettings:
        return NodeSettings(
            region=self.region,
            keepalive_seconds=self.keepalive_seconds,
            max_subscriptions_per_principal=self.max_subscriptions_per_principal,
            subscription_lease_seconds=self.subscription_lease_seconds,
            delivery_lease_seconds=self.delivery_lease_seconds,
            delivery_max_attempts=self.delivery_max_attempts,
            orphan_grace_seconds=self.orphan_grace_seconds,
            store_budget_seconds=self.db_request_budget_seconds,
            credit_ceilings=CreditCeilings(
                max_unread_items=self.max_unread_items_ceiling,
                max_unread_bytes=self.max_unread_bytes_ceiling,
                max_total_items=self.max_total_items_ceiling,
                max_total_bytes=self.max_total_bytes_ceiling,
                max_open_objects=self.max_open_objects_ceiling),
            max_streams_per_run=self.max_streams_per_run,
            upkeep=UpkeepSettings(
                audit_events=self.event_audit_events,
                receipt_ttl_seconds=self.receipt_ttl_seconds or None,
                receipt_min_seconds=self.receipt_min_seconds,
                delivery_keep_seconds=self.delivery_keep_seconds,
                gap_keep_seconds=self.gap_evidence_keep_seconds),
        )

    def database_bounds(self) -> DatabaseBounds:
        return DatabaseBounds(
            statement_timeout_seconds=self.db_statement_timeout_seconds,
            acquire_timeout_seconds=self.db_acquire_timeout_seconds,
            connect_timeout_seconds=self.db_connect_timeout_seconds,
            idle_in_transaction_seconds=self.db_idle_in_transaction_seconds,
            keepalive_seconds=self.db_keepalive_seconds)

    def resolved_jwt_secret(self) -> str:
        """The configured secret, or the node-local one (created on first use, mode 0600)."""
        if self.jwt_secret is not None:
            return self.jwt_secret.get_secret_value()
        try:
            secret = local_jwt_secret(self.data_dir)
        except UnsafeDataDir as unsafe:
            raise ConfigurationError(f"RUNNEL_DATA_DIR: {unsafe}") from None
        problem = secret_problem(secret)
        if problem is not None:
            raise ConfigurationError(f"{self.data_dir / JWT_SECRET_FILE}: {problem}")
        return secret


def secret_problem(secret: str) -> str | None:
    """Why `secret` cannot sign tokens, or None."""
    size = len(secret.encode())
    if size >= MIN_JWT_SECRET_BYTES:
        return None
    return (f"must be at least {MIN_JWT_SECRET_BYTES} bytes, not {size} (make one with "
            "`python3 -c 'import secrets; print(secrets.token_urlsafe(48))'`)")


def local_jwt_secret(data_dir: Path) -> str:
    """Read `data_dir/jwt-secret`, creating it exactly once even when two processes race:
    the secret is written to a private temporary file and hard-linked into place, which
    fails if another process linked its own first (then both use the winner's). The data
    directory is made private first (`private_directory`: `UnsafeDataDir` if it is not
    ours)."""
    data_dir = private_directory(data_dir)
    path = data_dir / JWT_SECRET_FILE
    if not path.exists():
        candidate = data_dir / f".{JWT_SECRET_FILE}.{os.getpid()}.{secrets.token_hex(4)}"
        fd = os.open(candidate, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as handle:
            handle.write(secrets.token_urlsafe(48))
            handle.flush()
            os.fsync(handle.fileno())
        try:
            os.link(candidate, path)
        except FileExistsError:
            pass
        finally:
            candidate.unlink()
    secret = path.read_text().strip()
    if not secret:
        raise RuntimeError(f"{path} is empty; delete it to generate a new secret")
    return secret
