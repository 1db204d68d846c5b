"""Filesystem adapters for the embedded, single-machine default."""

from adapters.fs.objects import FilesystemObjectStore, UnsafeObjectKey

__all__ = ["FilesystemObjectStore", "UnsafeObjectKey"]
