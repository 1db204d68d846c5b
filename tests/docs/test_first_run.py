"""The first run of a new user, as the README walks it (ADR 0036): the banner's example,
`runnel token` and the server's secret, the 401 of a token signed with another, a busy
port, and `runnel tail | head`."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from entrypoints.auth.tokens import SIGNATURE_MISMATCH, mint_token, verify_token
from entrypoints.commands.banner import DEV_TENANT
from entrypoints.commands.cli import main
from tests.http.server import RunnelServer

REPO = Path(__file__).parents[2]
COMMAND_SECONDS = 120
OTHER_SECRET = "another-secret-0123456789abcdef0123456789abcdef"


def clean_environment(**variables: str) -> dict[str, str]:
    """This process's environment without any RUNNEL_* variable, plus `variables`."""
    kept = {name: value for name, value in os.environ.items() if not name.startswith("RUNNEL_")}
    return {**kept, **variables}


def runnel(*args: str, cwd: Path = REPO, **variables: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "entrypoints.commands", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=COMMAND_SECONDS,
                          env=clean_environment(PYTHONPATH=str(REPO), **variables))


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("first-run") / "data"


@pytest.fixture(scope="module")
def server(data_dir: Path) -> Iterator[RunnelServer]:
    """A fresh server with no secret configured: it keeps its own under its data dir."""
    cleared: dict[str, str | None] = {name: None for name in os.environ
                                      if name.startswith("RUNNEL_")}
    started = RunnelServer.start({**cleared, "RUNNEL_JWT_SECRET": None,
                                  "RUNNEL_STORAGE": "memory"}, data_dir)
    try:
        yield started
    finally:
        started.stop()


def test_the_banners_example_works_on_a_fresh_server(server: RunnelServer,
                                                     tmp_path: Path) -> None:
    """Its two last lines, run as printed: the dev token's export, then the curl."""
    lines = server.banner.splitlines()
    export = next(line.strip() for line in lines if line.strip().startswith("export "))
    curl = lines[-1].strip()
    assert curl.startswith("curl ")
    (tmp_path / ".curlrc").write_text("fail-with-body\nshow-error\n")
    ran = subprocess.run(["bash", "-c", f"set -euo pipefail\n{export}\n{curl}"],
                         capture_output=True, text=True, timeout=COMMAND_SECONDS,
                         env=clean_environment(CURL_HOME=str(tmp_path)))
    assert ran.returncode == 0, ran.stdout + ran.stderr
    created = ran.stdout
    assert '"stream_id":"answer"' in created and '"run_id":"demo"' in created
    token = export.partition("=")[2]
    assert verify_token(token, (server.log.parent / "jwt-secret").read_text()).tenant == \
        DEV_TENANT
    listed = httpx.get(f"{server.api}/runs/demo/streams",
                       headers={"Authorization": f"Bearer {token}"})
    assert [s["stream_id"] for s in listed.json()["streams"]] == ["answer"]


def test_runnel_token_signs_with_the_servers_secret(server: RunnelServer,
                                                    data_dir: Path) -> None:
    minted = runnel("token", "--tenant", DEV_TENANT, "--sub", "alice", "--scopes",
                    "streams:read", RUNNEL_DATA_DIR=str(data_dir))
    assert minted.returncode == 0, minted.stderr
    answer = httpx.get(f"{server.api}/runs/demo/streams",
                       headers={"Authorization": f"Bearer {minted.stdout.strip()}"})
    assert answer.status_code == 200, answer.text


def test_runnel_token_elsewhere_refuses_names_the_path_and_creates_nothing(
        tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    refused = runnel("token", "--tenant", "dev", "--sub", "alice", "--scopes",
                     "streams:read", cwd=elsewhere)
    assert refused.returncode == 2
    assert refused.stdout == ""
    assert str(elsewhere / ".runnel" / "jwt-secret") in refused.stderr
    assert "RUNNEL_DATA_DIR" in refused.stderr and "RUNNEL_JWT_SECRET" in refused.stderr
    assert "Traceback" not in refused.stderr
    assert list(elsewhere.iterdir()) == []  # no secret, no directory


def test_log_id_refuses_too_rather_than_inventing_a_secret(tmp_path: Path) -> None:
    refused = runnel("log-id", "r1", cwd=tmp_path)
    assert refused.returncode == 2 and "jwt-secret" in refused.stderr
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(("flags", "said"), [
    (["--scopes", "streams:reed"], "unknown scope 'streams:reed'"),
    (["--scopes", "streams:read,admin"], "unknown scope 'admin'"),
    (["--scopes", " , "], "no scope"),
    (["--scopes", "streams:read,streams:read"], "listed twice"),
    (["--scopes", "streams:read", "--tenant", "a/b"], "--tenant must be"),
    (["--scopes", "streams:read", "--runs", "r1,../x"], "--runs must be"),
    (["--scopes", "streams:read", "--ttl", "0"], "--ttl must be"),
])
def test_runnel_token_refuses_claims_the_server_would_refuse(
        flags: list[str], said: str, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("RUNNEL_JWT_SECRET", OTHER_SECRET)
    arguments = ["token", "--sub", "alice", *flags]
    if "--tenant" not in flags:
        arguments += ["--tenant", "dev"]
    assert main(arguments) == 2
    printed = capsys.readouterr()
    assert said in printed.err and printed.out == ""


def test_runnel_token_mints_what_the_server_accepts(monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("RUNNEL_JWT_SECRET", OTHER_SECRET)
    assert main(["token", "--tenant", "dev", "--sub", "alice", "--scopes",
                 " streams:read, streams:admin ", "--runs", "r1,r2"]) == 0
    principal = verify_token(capsys.readouterr().out.strip(), OTHER_SECRET)
    assert (principal.tenant, principal.scopes, principal.runs) == (
        "dev", frozenset({"streams:read", "streams:admin"}), frozenset({"r1", "r2"}))


def test_runnel_token_refuses_for_a_server_that_takes_no_hs256_token(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    jwks = tmp_path / "jwks.json"
    jwks.write_text('{"keys": []}')
    monkeypatch.setenv("RUNNEL_JWT_SECRET", OTHER_SECRET)
    monkeypatch.setenv("RUNNEL_JWT_JWKS_FILE", str(jwks))
    assert main(["token", "--tenant", "dev", "--sub", "a", "--scopes", "streams:read"]) == 2
    assert "RUNNEL_JWT_ALGORITHMS" in capsys.readouterr().err


def test_a_token_signed_with_another_secret_is_a_401_that_says_so(
        server: RunnelServer) -> None:
    forged = mint_token(OTHER_SECRET, tenant=DEV_TENANT, sub="alice",
                        scopes=["streams:read"])
    answer = httpx.get(f"{server.api}/runs/demo/streams",
                       headers={"Authorization": f"Bearer {forged}"})
    assert answer.status_code == 401
    assert answer.json()["code"] == "unauthenticated"
    assert answer.json()["detail"] == SIGNATURE_MISMATCH
    garbage = httpx.get(f"{server.api}/runs/demo/streams",
                        headers={"Authorization": "Bearer not.a.token"})
    assert garbage.json()["detail"] != SIGNATURE_MISMATCH  # only a real mismatch says so


def test_a_busy_port_is_refused_before_anything_boots(tmp_path: Path) -> None:
    held = socket.socket()
    held.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    held.bind(("127.0.0.1", 0))
    held.listen()
    port = held.getsockname()[1]
    data = tmp_path / "data"
    try:
        refused = runnel("serve", "--port", str(port), RUNNEL_DATA_DIR=str(data))
    finally:
        held.close()
    assert refused.returncode == 2
    assert f"port {port} on 127.0.0.1 is already in use" in refused.stderr
    assert "--port" in refused.stderr and "Traceback" not in refused.stderr
    assert not (data / "pgdata").exists()  # the embedded Postgres never started


def test_tail_into_head_exits_quietly(server: RunnelServer, data_dir: Path) -> None:
    """Far more output than a pipe holds, so `tail` writes after `head` has gone."""
    token = mint_token((data_dir / "jwt-secret").read_text(), tenant=DEV_TENANT, sub="alice",
                       scopes=["streams:read", "streams:write"])
    headers = {"Authorization": f"Bearer {token}"}
    stream = f"{server.api}/runs/piped/streams"
    assert httpx.post(stream, headers=headers,
                      json={"stream_id": "long", "content_class": "output.text"}
                      ).status_code == 201
    for _ in range(4):
        batch = {"records": [{"payload": "x" * 2000} for _ in range(100)]}
        assert httpx.post(f"{stream}/long/records", headers=headers, json=batch
                          ).status_code == 201
    assert httpx.post(f"{stream}/long/close", headers=headers).status_code == 200
    piped = subprocess.run(
        ["bash", "-c", f"set -o pipefail; {sys.executable} -m entrypoints.commands tail piped long "
                       f"--url {server.url} | head -n 1"],
        cwd=REPO, capture_output=True, text=True, timeout=COMMAND_SECONDS,
        env=clean_environment(RUNNEL_TOKEN=token))
    assert piped.returncode == 0, piped.stderr
    assert re.fullmatch(r'1\t"x{2000}"\n', piped.stdout)
    assert "Traceback" not in piped.stderr and "BrokenPipe" not in piped.stderr, piped.stderr
