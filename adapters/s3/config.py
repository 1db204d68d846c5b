"""Where each region's object bodies live in S3, and how long a call to S3 may wait."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal


@dataclass(frozen=True)
class S3RegionConfig:
    """One region's bucket and how to reach it.

    `endpoint_url` is None for AWS itself; set it for an S3-compatible server
    (MinIO, moto, a gateway). `region_name` is the S3 signing region, which need
    not equal Runnel's region name. The secret is kept out of `repr` so a config
    dump or a traceback never prints it.
    """

    bucket: str
    endpoint_url: str | None = None
    access_key: str | None = None
    secret_key: str | None = field(default=None, repr=False)
    region_name: str = "us-east-1"
    addressing_style: Literal["auto", "path", "virtual"] = "auto"


@dataclass(frozen=True)
class S3Bounds:
    """How long one call to S3 may wait, in all (ADR 0050).

    botocore alone waits 60 s to connect and 60 s on every socket read, and tries five
    times: a hung S3 held a request for minutes. Here a call gives up after at most
    `max_attempts` × (`connect_timeout_seconds` + `read_timeout_seconds`) of silence,
    plus botocore's backoff between attempts, and is then `ObjectStoreUnavailable`. The
    read bound is on silence, not on a whole transfer: a download that keeps moving is
    never cut by it.

    A call that carries a body is bounded as a whole (`deadline`): aiohttp starts its
    read timer only once the body is written, and a silent S3 never takes it (no
    `100 Continue`, full socket buffers), so the socket bounds alone never fire.
    """

    connect_timeout_seconds: float = 5.0
    read_timeout_seconds: float = 15.0
    max_attempts: int = 3
    """Attempts in all, the first included (botocore's legacy retry mode and backoff)."""
    min_bytes_per_second: float = 256 * 1024
    """The slowest upload `deadline` allows for."""

    def deadline(self, body_bytes: int) -> float:
        """The longest one call carrying `body_bytes` may take, every attempt and
        botocore's backoff between them (at most 2^(n-1) − 1 s) included."""
        attempt = (self.connect_timeout_seconds + self.read_timeout_seconds
                   + body_bytes / self.min_bytes_per_second)
        return self.max_attempts * attempt + 2.0 ** (self.max_attempts - 1)
