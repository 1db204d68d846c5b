"""Where each region's object bodies live in S3."""

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
