"""The TypeScript SDK's own suites (node's test runner) against a real server: the sans-IO
unit tests and the server tests of sdk/typescript/test, with RUNNEL_URL and RUNNEL_TOKEN
naming the server; the package `npm pack` makes, installed and imported; and its published
types, as a user's code meets them."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

from tests.http.restart import RestartableServer
from tests.http.server import token
from tests.sdk_typescript.conftest import PACKAGE, built

NODE_MINUTES = 3
SHIPPED = {"dist/index.js", "dist/index.d.ts", "dist/react.js", "dist/react.d.ts",
           "package.json", "README.md"}


def node(args: list[str], cwd: Path, env: dict[str, str] | None = None,
         ) -> subprocess.CompletedProcess[str]:
    assert shutil.which("node") is not None, "node is needed (Node 20+)"
    return subprocess.run(args, cwd=cwd, env={**os.environ, **(env or {})}, text=True,
                          capture_output=True, timeout=NODE_MINUTES * 60, check=False)


def test_the_node_suites_pass_against_a_real_server(runnel: RestartableServer) -> None:
    built("dist/index.js")
    suites = sorted(str(path.relative_to(PACKAGE))
                    for path in (PACKAGE / "test").glob("*/*.test.mjs"))
    assert any(name.startswith("test/server/") for name in suites), suites
    done = node(["node", "--test", *suites], PACKAGE,
                {"RUNNEL_URL": runnel.url, "RUNNEL_TOKEN": token(ttl=3600),
                 "RUNNEL_ADMIN_TOKEN": token(sub="root", ttl=3600, scopes=(
                     "streams:read", "streams:write", "streams:admin"))})
    assert done.returncode == 0, (
        f"node --test failed:\n{done.stdout[-20000:]}\n{done.stderr[-4000:]}")
    assert "# fail 0" in done.stdout


def test_npm_pack_makes_a_tarball_that_installs_and_imports(tmp_path: Path) -> None:
    built("dist/react.js")
    listed = node(["npm", "pack", "--dry-run", "--json", "--ignore-scripts"], PACKAGE)
    assert listed.returncode == 0, listed.stderr
    files = {entry["path"] for entry in json.loads(listed.stdout)[0]["files"]}
    assert files >= SHIPPED, sorted(SHIPPED - files)
    assert not any(path.startswith(("src/", "test/", "node_modules/")) for path in files), files
    packed = node(["npm", "pack", "--ignore-scripts", "--pack-destination", str(tmp_path)],
                  PACKAGE)
    assert packed.returncode == 0, packed.stderr
    tarball = tmp_path / packed.stdout.strip().splitlines()[-1]
    app = tmp_path / "app"
    app.mkdir()
    (app / "package.json").write_text('{"name": "app", "private": true, "type": "module"}')
    installed = node(["npm", "install", "--offline", "--no-audit", "--no-fund",
                      "--loglevel=error", str(tarball)], app)
    assert installed.returncode == 0, installed.stderr
    imported = node(["node", "--input-type=module", "-e", (
        "const sdk = await import('@runnel/client');"
        "const client = new sdk.RunnelClient({baseUrl: 'http://127.0.0.1:1', token: 't'});"
        "console.log(JSON.stringify({handle: client.stream('r', 's').streamId,"
        " errors: typeof sdk.ResyncRequired,"
        " react: import.meta.resolve('@runnel/client/react')}));")],
        app)
    assert imported.returncode == 0, imported.stderr
    shown = json.loads(imported.stdout)
    assert (shown["handle"], shown["errors"]) == ("s", "function")
    assert shown["react"].endswith("/node_modules/@runnel/client/dist/react.js")


def test_the_published_types_catch_a_users_mistakes() -> None:
    """test/types/usage.tsx compiles against dist's .d.ts through the package's exports; its
    `@ts-expect-error` lines are mistakes the types must refuse (an unused one fails)."""
    built("dist/index.d.ts")
    checked = node(["node", "node_modules/typescript/bin/tsc", "-p", "test/types/tsconfig.json"],
                   PACKAGE)
    assert checked.returncode == 0, checked.stdout + checked.stderr
