"""The README, run: its marked shell blocks, in order, against a real server, so that a
README that drifts from the product fails the build (markers: `readme_blocks.py`).

The server is what `make run` starts: `runnel serve` with its workers on the embedded
default (no database, no secret configured), with a data directory of its own. The
blocks run from the checkout's root with `RUNNEL_DATA_DIR` pointing there, which is
what running them beside `make run`'s `.runnel/` amounts to; `http://127.0.0.1:8080`
in a block becomes the server's real address. curl answers any 4xx or 5xx with a
failure (a `.curlrc` with `--fail-with-body`), so a request the server refuses fails
the test, and so does a command that exits non-zero.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from entrypoints.commands.banner import DEV_TENANT
from tests.docs.readme_blocks import Step, marked_blocks, script, shows, steps
from tests.http.server import RunnelServer

REPO = Path(__file__).parents[2]
README = REPO / "README.md"
DOCUMENTED_URL = "http://127.0.0.1:8080"
SCRIPT_SECONDS = 300
COVERED = ("runnel token", "/runs/demo/streams\n", "/records", "/subscribe", "/close",
           "/ack", "runnel tail", "idempotency_key")
"""What "A first stream" must show, each in a block that runs: create, append, read,
subscribe, ack, close, tail, and a retried key."""


def plan() -> list[Step]:
    return steps(marked_blocks(README.read_text()))


def node_environment(**overrides: str | None) -> dict[str, str | None]:
    """Every RUNNEL_* variable of this process removed (None), plus `overrides`."""
    cleared: dict[str, str | None] = {name: None for name in os.environ
                                      if name.startswith("RUNNEL_")}
    return {**cleared, **overrides}


@pytest.fixture(scope="module")
def first_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunnelServer]:
    data_dir = tmp_path_factory.mktemp("readme") / "data"
    server = RunnelServer.start(node_environment(RUNNEL_JWT_SECRET=None), data_dir,
                                workers=True)
    try:
        yield server
    finally:
        server.stop()


def test_the_readme_marks_a_first_stream_from_token_to_tail() -> None:
    """The markers cannot quietly vanish: every step of the walk-through is a run block,
    and every command block shows what it prints."""
    found = plan()
    commands = "\n".join(step.block.text for step in found)
    for needed in COVERED:
        assert needed in commands, f"no marked block runs {needed!r}"
    assert [step.block.kind for step in found].count("background") >= 1
    for step in found[1:]:
        assert step.expected, f"README line {step.block.line}: show what this prints"


def test_one_tenant_throughout() -> None:
    """The README's tokens, the banner's token and the viewer text name the same tenant."""
    text = README.read_text()
    commands = "\n".join(step.block.text for step in plan())
    assert set(re.findall(r"--tenant (\S+)", commands)) == {DEV_TENANT}
    assert f"tenant `{DEV_TENANT}`" in text.split("## A first stream")[0]
    assert "tenants keep runs apart" in text


def test_the_readme_commands_run_against_a_fresh_server(first_run: RunnelServer,
                                                        tmp_path: Path) -> None:
    runnel = REPO / ".venv" / "bin" / "runnel"
    assert runnel.is_file(), f"{runnel} is missing: the README's commands need `make install`"
    found = plan()
    at_server = [replace(step, block=replace(
        step.block, text=step.block.text.replace(DOCUMENTED_URL, first_run.url)))
        for step in found]
    outputs, progress = tmp_path / "outputs", tmp_path / "progress"
    outputs.mkdir()
    (tmp_path / ".curlrc").write_text("fail-with-body\nshow-error\n")
    environment = {name: value for name, value in os.environ.items()
                   if not name.startswith("RUNNEL_")}
    environment |= {"RUNNEL_DATA_DIR": str(first_run.log.parent),  # the server's data dir
                    "CURL_HOME": str(tmp_path)}
    process = subprocess.Popen(["bash", "-c", script(at_server, outputs, progress)],
                               cwd=REPO, env=environment, start_new_session=True,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        printed, _ = process.communicate(timeout=SCRIPT_SECONDS)
    except subprocess.TimeoutExpired:
        printed = "(timed out)"
    finally:  # a failed script leaves its background subscriber behind
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    reached = progress.read_text().strip() if progress.exists() else "nothing"
    if process.returncode != 0 or reached != "done":
        step = found[int(reached)] if reached.isdigit() else None
        where = f"the block at README line {step.block.line}" if step else reached
        shown = (outputs / reached).read_text() if reached.isdigit() else ""
        pytest.fail(f"{where} failed (status {process.returncode}):\n{shown}\n{printed}\n"
                    f"server log:\n{first_run.log.read_text()[-3000:]}")
    for number, step in enumerate(found):
        output = (outputs / str(number)).read_text()
        for expected in step.expected:
            assert shows(expected.text, output), (
                f"README line {expected.line} shows\n{expected.text}\nbut the block at line "
                f"{step.block.line} printed\n{output}")
