"""Filesystem object store for the embedded default: `<root>/<region>/<key>`.

Rules:

- **Atomic and durable publish.** A body is written to a temporary file in the
  destination directory (same filesystem, so the rename is atomic), flushed and
  fsynced, renamed over the final name, and the directory is fsynced so the
  rename itself survives a crash. Newly created directories are fsynced into
  their parents the same way. A reader therefore sees either no body or a
  whole, verified one under the final name, never a partial file.
- **Nothing kept on failure.** A size or digest mismatch, a failing body
  iterator or a cancellation removes the temporary file; the final name is
  never touched. (A hard crash can leave a `.partial` file, which is never
  mistaken for a body; see ADR 0010.)
- **Keys stay inside the root.** A key is `/`-separated segments; an empty,
  `.` or `..` segment, an absolute key, a backslash or a NUL is refused with
  `UnsafeObjectKey` before any I/O, and so is such a region name.
- **Private to the service's user.** A body is created with mode 0600 and every
  directory the store creates with 0700, set explicitly after creation so that no
  umask (however permissive) widens them: other local users read nothing.
- **The digest is measured, not remembered.** `stat` hashes the file on disk:
  there is no sidecar that could disagree with (or outlive) the body, and it
  reports what is really there. Bodies are bounded (32 MiB), so this is cheap.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import os
import secrets
from collections.abc import AsyncGenerator, AsyncIterable, AsyncIterator, Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import BinaryIO, cast

from adapters.object_verification import verified_chunks
from application.ports.errors import ObjectRegionUnavailable
from application.ports.objects import ListedObject, ObjectEvidence

READ_CHUNK = 64 * 1024
_HASH_BLOCK = 1024 * 1024
_PARTIAL_SUFFIX = ".partial"
BODY_MODE = 0o600
DIRECTORY_MODE = 0o700


class UnsafeObjectKey(ValueError):
    """A key or region that would not name a file strictly inside the store's root."""


def _safe_segments(value: str, what: str) -> list[str]:
    if not value or value.startswith("/") or "\\" in value or "\x00" in value:
        raise UnsafeObjectKey(f"{what} {value!r} is not a relative, /-separated path")
    segments = value.split("/")
    if any(segment in ("", ".", "..") for segment in segments):
        raise UnsafeObjectKey(f"{what} {value!r} has an empty, '.' or '..' segment")
    return segments


class FilesystemObjectStore:
    """The `ObjectStore` port on a local directory (see the module docstring for the
    rules). With `regions` given, any other region is refused (`LookupError`), as
    in the other stores; without, every safe region name gets its own directory.
    """

    def __init__(self, root: Path, regions: Iterable[str] | None = None) -> None:
        self._root = Path(root)
        self._regions = None if regions is None else frozenset(regions)
        for region in self._regions or ():
            _safe_segments(region, "region")
            if "/" in region:
                raise UnsafeObjectKey(f"region {region!r} must be a single path segment")

    def serves(self, region: str) -> bool:
        return self._regions is None or region in self._regions

    def path_for(self, region: str, key: str) -> Path:
        """Where a body lives; refuses unknown regions and keys that would escape."""
        if self._regions is not None and region not in self._regions:
            raise ObjectRegionUnavailable(f"no object store configured for region {region!r}")
        if len(_safe_segments(region, "region")) != 1:
            raise UnsafeObjectKey(f"region {region!r} must be a single path segment")
        return self._root.joinpath(region, *_safe_segments(key, "object key"))

    async def put(self, region: str, key: str, body: AsyncIterable[bytes], size: int,
                  sha256: str) -> ObjectEvidence:
        final = self.path_for(region, key)
        await asyncio.to_thread(_make_directories, final.parent)
        temporary = final.with_name(f".{final.name}.{secrets.token_hex(8)}{_PARTIAL_SUFFIX}")
        try:
            handle = await asyncio.to_thread(_create_private, temporary)
            try:
                # An async generator in fact: close it at once on failure, not at collection.
                verified = cast(AsyncGenerator[bytes, None], verified_chunks(body, size, sha256))
                async with contextlib.aclosing(verified) as chunks:
                    async for chunk in chunks:
                        await asyncio.to_thread(handle.write, chunk)
                await asyncio.to_thread(_flush_to_disk, handle)
            finally:
                handle.close()
            await asyncio.to_thread(_publish, temporary, final)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                temporary.unlink()
            raise
        return ObjectEvidence(size, sha256)

    async def stat(self, region: str, key: str) -> ObjectEvidence | None:
        return await asyncio.to_thread(_measure, self.path_for(region, key))

    async def open(self, region: str, key: str) -> AsyncIterator[bytes]:
        """Stream a body in chunks; `FileNotFoundError` when there is none."""
        path = self.path_for(region, key)
        handle = await asyncio.to_thread(_open_body, path)
        try:
            while chunk := await asyncio.to_thread(handle.read, READ_CHUNK):
                yield chunk
        finally:
            handle.close()

    async def delete(self, region: str, key: str) -> None:
        path = self.path_for(region, key)
        await asyncio.to_thread(_remove, path)

    async def list_objects(self, region: str, prefix: str = "") -> AsyncIterator[ListedObject]:
        """Walks the region's directory; temporary files of uploads in flight (dot-named)
        are not bodies and are never listed."""
        root = self.path_for(region, "_").parent  # the region directory, region checked
        for listed in await asyncio.to_thread(_walk, root, prefix):
            yield listed


def _walk(root: Path, prefix: str) -> list[ListedObject]:
    found: list[ListedObject] = []
    for directory, _, files in os.walk(root):
        for name in files:
            if name.startswith("."):
                continue
            path = Path(directory, name)
            key = path.relative_to(root).as_posix()
            if not key.startswith(prefix):
                continue
            try:
                modified = path.stat().st_mtime
            except FileNotFoundError:  # deleted while walking
                continue
            found.append(ListedObject(key, datetime.fromtimestamp(modified, UTC)))
    return found


def _make_directories(directory: Path) -> None:
    """`mkdir -p`, fsyncing each new directory's parent so the new entry is durable."""
    missing: list[Path] = []
    while not directory.is_dir():
        missing.append(directory)
        directory = directory.parent
    for new in reversed(missing):
        # Another upload may create the same directory concurrently.
        with contextlib.suppress(FileExistsError):
            new.mkdir(DIRECTORY_MODE)
            os.chmod(new, DIRECTORY_MODE)  # mkdir's mode is filtered by the umask
        _fsync_directory(new.parent)


def _create_private(path: Path) -> BinaryIO:
    """A new file (never an existing one) that only the service's user can read."""
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, BODY_MODE)
    try:
        os.fchmod(descriptor, BODY_MODE)  # the umask filtered the creation mode
        return os.fdopen(descriptor, "wb")
    except BaseException:
        os.close(descriptor)
        raise


def _flush_to_disk(handle: BinaryIO) -> None:
    handle.flush()
    os.fsync(handle.fileno())


def _publish(temporary: Path, final: Path) -> None:
    os.replace(temporary, final)
    _fsync_directory(final.parent)


def _fsync_directory(directory: Path) -> None:
    descriptor = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def _open_body(path: Path) -> BinaryIO:
    try:
        return path.open("rb")
    except IsADirectoryError as error:
        # A key that is a prefix of other keys names a directory, not a body.
        raise FileNotFoundError(str(path)) from error


def _measure(path: Path) -> ObjectEvidence | None:
    try:
        handle = _open_body(path)
    except FileNotFoundError:
        return None
    with handle:
        digest = hashlib.sha256()
        size = 0
        while block := handle.read(_HASH_BLOCK):
            size += len(block)
            digest.update(block)
    return ObjectEvidence(size, digest.hexdigest())


def _remove(path: Path) -> None:
    try:
        path.unlink()
    except (FileNotFoundError, IsADirectoryError):
        return
    _fsync_directory(path.parent)
