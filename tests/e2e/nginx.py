"""Debian's nginx as a plain process, running the kit's site config (`deploy/nginx/runnel.conf`).

The site config is used as shipped; only what a deployment edits is replaced: the
`server` lines of the upstream (one per node, with the template's parameters) and the
`listen` address. The main config around it gives nginx its own pid, log and temp paths
in a temporary directory, and `daemon off`, so the test owns the one process it starts.
"""

from __future__ import annotations

import getpass
import os
import re
import socket
import subprocess
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import httpx

NGINX = Path("/usr/sbin/nginx")
SITE = Path(__file__).parents[2] / "deploy" / "nginx" / "runnel.conf"
UPSTREAM_SERVER = re.compile(r"^(\s*)server (\S+:\d+)((?: [^;]*)?);$", re.MULTILINE)
LISTEN = re.compile(r"^(\s*)listen 80;$", re.MULTILINE)

MAIN = """\
daemon off;
worker_processes 1;
{user}
pid {dir}/nginx.pid;
error_log {dir}/error.log info;
events {{ worker_connections 512; }}
http {{
    access_log {dir}/access.log;
    client_body_temp_path {dir}/client_body;
    proxy_temp_path {dir}/proxy;
    fastcgi_temp_path {dir}/fastcgi;
    uwsgi_temp_path {dir}/uwsgi;
    scgi_temp_path {dir}/scgi;
    include {dir}/runnel.conf;
}}
"""


def render_site(template: str, upstreams: Sequence[str], listen: str) -> str:
    """The site config with one upstream `server` line per node and nginx on `listen`."""
    examples = list(UPSTREAM_SERVER.finditer(template))
    assert examples, "the template has no upstream server lines"
    indent, _, parameters = examples[0].groups()
    lines = "\n".join(f"{indent}server {address}{parameters};" for address in upstreams)
    first, last = examples[0], examples[-1]
    rendered = template[:first.start()] + lines + template[last.end():]
    rendered, listens = LISTEN.subn(rf"\g<1>listen {listen};", rendered)
    assert listens == 1, "the template has no `listen 80;`"
    return rendered


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextmanager
def running_nginx(upstreams: Sequence[str], directory: Path) -> Iterator[str]:
    """nginx in front of `upstreams` (host:port each); yields its base URL."""
    directory.mkdir(parents=True, exist_ok=True)
    port = free_port()
    (directory / "runnel.conf").write_text(
        render_site(SITE.read_text(), upstreams, f"127.0.0.1:{port}"))
    # As root nginx drops its workers to `nobody`, who cannot enter pytest's private temp
    # directories: keep them as the user running the test.
    user = f"user {getpass.getuser()};" if os.geteuid() == 0 else ""
    (directory / "nginx.conf").write_text(MAIN.format(dir=directory, user=user))
    args = [str(NGINX), "-p", str(directory), "-c", str(directory / "nginx.conf"),
            "-e", str(directory / "error.log")]
    checked = subprocess.run([*args, "-t"], capture_output=True, text=True)
    assert checked.returncode == 0, checked.stderr
    process = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_until_serving(url, process, directory)
        yield url
    finally:
        process.terminate()  # SIGTERM: nginx's fast shutdown
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _wait_until_serving(url: str, process: subprocess.Popen[bytes], directory: Path) -> None:
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"nginx exited:\n{(directory / 'error.log').read_text()}")
        try:
            if httpx.get(url + "/healthz", timeout=2).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.1)
    raise RuntimeError(f"nginx did not serve:\n{(directory / 'error.log').read_text()}")
