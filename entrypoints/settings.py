"""Node configuration from `RUNNEL_*` environment variables (pydantic-settings).

Every knob a deployment turns lives here, with the default that makes a fresh
checkout work: no database URL means an embedded Postgres under `DATA_DIR`,
no JWT secret means one generated once and kept in `DATA_DIR/jwt-secret`, so
`runnel token` and `runnel serve` on the same machine agree without setup.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from application.node import NodeSettings
from domain.credit_ceilings import INT64_MAX, CreditCeilings
from domain.definition import MAX_OPEN_OBJECTS_CEILING, MAX_UNREAD_ITEMS_CEILING

JWT_SECRET_FILE = "jwt-secret"


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
    model_config = SettingsConfigDict(env_prefix="RUNNEL_", extra="ignore", frozen=True)

    database_url: str | None = None
    """Postgres DSN; unset → an embedded Postgres under `data_dir`."""
    storage: Literal["postgres", "memory"] = "postgres"
    """`memory` runs the whole service in this process (simulation; nothing survives exit)."""
    data_dir: Path = Path(".runnel")
    region: str = Field("local", pattern=r"^[A-Za-z0-9._:-]{1,128}$")
    jwt_secret: SecretStr | None = None
    keepalive_seconds: float = Field(15.0, gt=0)
    sweep_seconds: float = Field(5.0, gt=0)
    sse_stall_seconds: float = Field(60.0, gt=0)
    """A subscriber taking no frame for this long is disconnected (it resumes losing nothing)."""
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
    workers: bool = True
    """Run the background workers in the API process (`runnel serve --no-workers` turns it off)."""
    wait_service: Literal["none", "webhook", "notify", "memory"] | None = None
    """Where input events go: `webhook` POSTs each to `webhook_url` (delivered: the receiver
    answered 2xx); `notify` sends each as a Postgres NOTIFY on `notify_channel` (published:
    only sessions listening at commit get it); `none` delivers nothing, input records stay
    pending until a node with a wait service takes them; `memory` keeps them in this
    process (`storage=memory` only). Unset → `memory` with `storage=memory`, else `none`
    (ADR 0014)."""
    webhook_url: str | None = None
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
    object_store: Literal["fs", "s3", "memory"] | None = None
    """Where object bodies go; unset → `s3` when `s3_regions` is given, `memory` with
    `storage=memory`, else `fs` under `data_dir/objects`."""
    s3_regions: dict[str, S3RegionSettings] = Field(default_factory=dict)
    """JSON: one bucket per region, `{"eu": {"bucket": "…", "endpoint_url": "…", …}}`."""
    object_regions: tuple[str, ...] = ()
    """Regions the `fs`/`memory` store serves (JSON list); empty → the node's own region."""

    max_streams_per_run: int = Field(1000, gt=0)
    """Streams one run may hold; a create past it is 409 `too_many_streams` (counted under
    the run's lock, so it holds across nodes)."""
    # Ceilings on the credit pins a client may declare at creation (422 above them). Each
    # admits at least the SPEC default of its pin, so a definition without credit fits.
    max_unread_items_ceiling: int = Field(100_000, ge=1000, le=MAX_UNREAD_ITEMS_CEILING)
    max_unread_bytes_ceiling: int = Field(256 * 1024**2, ge=8 * 1024**2, le=INT64_MAX)
    max_total_items_ceiling: int = Field(10_000_000, ge=100_000, le=INT64_MAX)
    max_total_bytes_ceiling: int = Field(64 * 1024**3, ge=1024**3, le=INT64_MAX)
    max_open_objects_ceiling: int = Field(10_000, ge=100, le=MAX_OPEN_OBJECTS_CEILING)

    @field_validator("wait_service", mode="before")
    @classmethod
    def _empty_is_unset(cls, value: object) -> object:
        return None if value == "" else value

    @model_validator(mode="after")
    def _wait_service_fits(self) -> Settings:
        kind = self.wait_service_kind()
        if kind == "webhook" and not self.webhook_url:
            raise ValueError("RUNNEL_WAIT_SERVICE=webhook needs RUNNEL_WEBHOOK_URL")
        if kind == "notify" and self.storage != "postgres":
            raise ValueError("RUNNEL_WAIT_SERVICE=notify needs RUNNEL_STORAGE=postgres")
        if kind == "memory" and self.storage != "memory":
            raise ValueError("RUNNEL_WAIT_SERVICE=memory needs RUNNEL_STORAGE=memory: input "
                             "records would be marked delivered into a list in one process; "
                             "use webhook or notify, or none to keep them pending")
        return self

    def wait_service_kind(self) -> Literal["none", "webhook", "notify", "memory"]:
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
            credit_ceilings=CreditCeilings(
                max_unread_items=self.max_unread_items_ceiling,
                max_unread_bytes=self.max_unread_bytes_ceiling,
                max_total_items=self.max_total_items_ceiling,
                max_total_bytes=self.max_total_bytes_ceiling,
                max_open_objects=self.max_open_objects_ceiling),
            max_streams_per_run=self.max_streams_per_run,
        )

    def resolved_jwt_secret(self) -> str:
        """The configured secret, or the node-local one (created on first use, mode 0600)."""
        if self.jwt_secret is not None:
            return self.jwt_secret.get_secret_value()
        return local_jwt_secret(self.data_dir)


def local_jwt_secret(data_dir: Path) -> str:
    """Read `data_dir/jwt-secret`, creating it exactly once even when two processes race:
    the secret is written to a private temporary file and hard-linked into place, which
    fails if another process linked its own first (then both use the winner's)."""
    path = data_dir / JWT_SECRET_FILE
    if not path.exists():
        data_dir.mkdir(parents=True, exist_ok=True)
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
