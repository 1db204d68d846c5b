"""The data directory (`RUNNEL_DATA_DIR`): only its owner lists or writes it (ADR 0053).

Rules:
- a missing directory is created 0700 (the umask can only narrow it; missing parents
  get the umask's modes: only the data directory itself holds anything);
- an existing one of this user that its group or others may read or write loses those
  bits (0755 becomes 0711), with a warning that says so (tightened, not refused: ADR
  0053). Execute-only stays: it lists nothing, and under root the embedded Postgres's
  system user must pass through it, also while another process is starting it
  (`adapters/postgres/embedded.py`);
- one owned by another user is refused (`UnsafeDataDir`): whoever owns it could have
  put a token secret of their own in it, or read ours.
"""

from __future__ import annotations

import contextlib
import logging
import os
import stat
from pathlib import Path

DATA_DIR_MODE = 0o700
_OTHERS_READ_OR_WRITE = 0o066

log = logging.getLogger(__name__)


class UnsafeDataDir(RuntimeError):
    """The data directory belongs to another user, or cannot be made private."""


def private_directory(path: Path) -> Path:
    """Create or check `path` as above; the path, resolved."""
    path = Path(path).expanduser().resolve()
    path.parent.mkdir(parents=True, exist_ok=True)
    # The umask only takes bits away, so this is never looser than 0700. No chmod after
    # it: under root, another process may have opened it to the server's user meanwhile.
    with contextlib.suppress(FileExistsError):
        path.mkdir(DATA_DIR_MODE)
    status = path.stat()
    if not stat.S_ISDIR(status.st_mode):
        raise UnsafeDataDir(f"{path} is not a directory")
    if status.st_uid != os.geteuid():
        raise UnsafeDataDir(
            f"{path} belongs to uid {status.st_uid}, not to this user (uid {os.geteuid()}): "
            "run Runnel as its owner, or point RUNNEL_DATA_DIR at a directory of your own")
    mode = stat.S_IMODE(status.st_mode)
    if mode & _OTHERS_READ_OR_WRITE:
        tightened = mode & ~_OTHERS_READ_OR_WRITE
        os.chmod(path, tightened)
        log.warning("%s was mode %04o (others could list it); made it %04o", path, mode,
                    tightened)
    return path
