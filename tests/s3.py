"""A real S3 server for tests: moto's server over HTTP, in a child process.

The server runs out of process so that its state, its threads and moto's
botocore hooks never touch the process under test, and so that tests talk to S3
exactly as production does: over HTTP, with signed requests. One server serves
the whole test session (moto starts in about a second and is heavy); tests stay
independent by taking fresh buckets (`new_bucket`).

The child binds port 0 and reports the port it got, so there is no race for a
"free" port; it exits when its stdin closes, which also happens when the test
process dies, so no server outlives the session.

Use `moto_s3_server()` from any fixture, or make the `moto_s3` session fixture
visible with `from tests.s3 import moto_s3  # noqa: F401` in a conftest.py.
Every caller in the process shares the same server.
"""

from __future__ import annotations

import atexit
import subprocess
import sys
import tempfile
import threading
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import boto3
import pytest
from aiobotocore.session import get_session
from botocore.config import Config

from adapters.s3 import S3ObjectStore, S3RegionConfig

_CHILD = """
import sys
from moto.server import ThreadedMotoServer

server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
server.start()
print(server.get_host_and_port()[1], flush=True)
sys.stdin.read()
server.stop()
"""
_START_TIMEOUT_SECONDS = 60


@dataclass(frozen=True)
class MotoS3:
    """How to reach the test S3 server, and a few admin operations on it."""

    endpoint_url: str
    access_key: str = "testing"
    secret_key: str = "testing"
    region_name: str = "us-east-1"

    def region_config(self, bucket: str) -> S3RegionConfig:
        return S3RegionConfig(bucket=bucket, endpoint_url=self.endpoint_url,
                              access_key=self.access_key, secret_key=self.secret_key,
                              region_name=self.region_name, addressing_style="path")

    def client(self) -> Any:
        """A synchronous boto3 client, for setting up and inspecting from tests."""
        return boto3.client("s3", endpoint_url=self.endpoint_url,
                            aws_access_key_id=self.access_key,
                            aws_secret_access_key=self.secret_key,
                            region_name=self.region_name,
                            config=Config(s3={"addressing_style": "path"}))

    def object_store(self, buckets: Mapping[str, str]) -> S3ObjectStore:
        """An (unstarted) store with one bucket per region, `{region: bucket}`.

        Test stores share one aiobotocore session: it caches the service models,
        which otherwise costs about 0.1 s per client.
        """
        regions = {region: self.region_config(bucket) for region, bucket in buckets.items()}
        return S3ObjectStore(regions, session=_AIO_SESSION)

    def new_bucket_name(self, prefix: str = "runnel") -> str:
        """A bucket name no other test uses (not created)."""
        return f"{prefix}-{uuid.uuid4().hex[:16]}"

    def new_bucket(self, prefix: str = "runnel") -> str:
        """Create a bucket no other test uses and return its name."""
        name = self.new_bucket_name(prefix)
        self.client().create_bucket(Bucket=name)
        return name


class _Server:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._process: subprocess.Popen[str] | None = None
        self._s3: MotoS3 | None = None

    def get(self) -> MotoS3:
        with self._lock:
            if self._s3 is None:
                self._s3 = self._start()
                atexit.register(self.stop)
            return self._s3

    def _start(self) -> MotoS3:
        # Request logs go to an (unlinked) file, never to a pipe nobody drains: a
        # full pipe would block the server. The child keeps its own descriptor.
        with tempfile.TemporaryFile(mode="w+") as log:
            process = subprocess.Popen([sys.executable, "-c", _CHILD], stdin=subprocess.PIPE,
                                       stdout=subprocess.PIPE, stderr=log, text=True)
            port_line = _read_line(process, _START_TIMEOUT_SECONDS)
            if not port_line.strip().isdigit():
                process.kill()
                process.wait()
                log.seek(0)
                raise RuntimeError(
                    f"moto server did not start: {port_line!r}\n{log.read()[-4000:]}")
        self._process = process
        return MotoS3(endpoint_url=f"http://127.0.0.1:{int(port_line)}")

    def stop(self) -> None:
        process, self._process = self._process, None
        if process is None:
            return
        assert process.stdin is not None
        process.stdin.close()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _read_line(process: subprocess.Popen[str], timeout: float) -> str:
    """The child's first stdout line, or "" if it died or stayed silent too long."""
    assert process.stdout is not None
    stdout = process.stdout
    result: list[str] = []
    reader = threading.Thread(target=lambda: result.append(stdout.readline()), daemon=True)
    reader.start()
    reader.join(timeout)
    return result[0] if result else ""


_SERVER = _Server()
_AIO_SESSION = get_session()


def moto_s3_server() -> MotoS3:
    """The session's S3 server, started on first use and stopped when the process exits."""
    return _SERVER.get()


@pytest.fixture(scope="session")
def moto_s3() -> MotoS3:
    return moto_s3_server()
