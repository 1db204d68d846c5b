"""Which object store a node uses, opened and closed with the node.

- `RUNNEL_OBJECT_STORE=s3` (or unset with `RUNNEL_S3_REGIONS` given): one bucket
  per region from `RUNNEL_S3_REGIONS`; its clients live as long as the node.
- `fs` (unset, without S3 regions): bodies under `RUNNEL_DATA_DIR/objects`, one
  directory per region of `RUNNEL_OBJECT_REGIONS` (default: the node's region).
- `memory` (unset with `RUNNEL_STORAGE=memory`): bodies in this process only.

A region that is not configured is refused by every store (`LookupError`), so
a body never lands in the node's own region because compute moved.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from adapters.fs.objects import FilesystemObjectStore
from adapters.memory.objects import MemoryObjectStore
from adapters.s3 import S3Bounds, S3ObjectStore, S3RegionConfig
from application.ports.objects import ObjectStore
from entrypoints.composition.settings import Settings

OBJECTS_DIR = "objects"


@asynccontextmanager
async def open_object_store(settings: Settings) -> AsyncIterator[ObjectStore]:
    kind = settings.object_store_kind()
    if kind == "memory":
        yield MemoryObjectStore(settings.object_store_regions())
        return
    if kind == "fs":
        yield FilesystemObjectStore(settings.data_dir / OBJECTS_DIR,
                                    regions=settings.object_store_regions())
        return
    regions = {region: S3RegionConfig(bucket=config.bucket, endpoint_url=config.endpoint_url,
                                      access_key=config.access_key,
                                      secret_key=(None if config.secret_key is None
                                                  else config.secret_key.get_secret_value()),
                                      region_name=config.region_name,
                                      addressing_style=config.addressing_style)
               for region, config in settings.s3_regions.items()}
    bounds = S3Bounds(connect_timeout_seconds=settings.s3_connect_timeout_seconds,
                      read_timeout_seconds=settings.s3_read_timeout_seconds,
                      max_attempts=settings.s3_max_attempts)
    async with S3ObjectStore(regions, bounds=bounds) as store:
        yield store
