"""S3 object store: one bucket per region, reached through aiobotocore."""

from adapters.s3.config import S3Bounds, S3RegionConfig
from adapters.s3.store import S3ObjectStore

__all__ = ["S3Bounds", "S3ObjectStore", "S3RegionConfig"]
