"""The README and every document in `docs/` (not `docs/adr/`), run: each runnable block as
written, in order, against a real server, so that a document that drifts from the product
fails the build (which blocks run, and the markers: `readme_blocks.py`).

The server is what `make run` starts (`make_run.py`): `runnel serve` with its workers on
the embedded default, no database, no secret configured. A document's blocks run from
the checkout's root with `RUNNEL_DATA_DIR` pointing at that server's data directory,
which is what running them beside `make run`'s `.runnel/` amounts to;
`http://127.0.0.1:8080` in a block becomes the server's real address. The README starts
from nothing: its first block mints the token and names the API. Every other document
starts where that block leaves a reader: `RUNNEL_URL` and `RUNNEL_TOKEN` (tenant `dev`,
read and write) exported. curl answers any 4xx or 5xx with a failure (a `.curlrc` with
`--fail-with-body`), so a request the server refuses fails the test (a block that shows
a refusal says `|| true` or reads the status with `-w`), and so does a command that
exits non-zero.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest

from entrypoints.commands.banner import DEV_TENANT
from tests.docs.make_run import RUNNEL, MakeRun, without_runnel_variables
from tests.docs.readme_blocks import Step, blocks, script, shows, steps

REPO = Path(__file__).parents[2]
README = REPO / "README.md"
DOCUMENTS = (README, *sorted((REPO / "docs").glob("*.md")))
DOCUMENTED_URL = "http://127.0.0.1:8080"
SCRIPT_SECONDS = 300
COVERED = ("runnel token", "/runs/demo/streams\n", "/records", "/subscribe", "/close",
           "/ack", "runnel tail", "idempotency_key")
"""What "A first stream" must show, each in a block that runs: create, append, read,
subscribe, ack, close, tail, and a retried key."""
README_LINES = 400


def plan(document: Path) -> list[Step]:
    return steps(blocks(document.read_text()))


def name(document: Path) -> str:
    return str(document.relative_to(REPO))


def test_the_readme_marks_a_first_stream_from_token_to_tail() -> None:
    """The walk-through cannot quietly stop running: every step of it is a block that
    runs, and every block after the first shows what it prints."""
    found = plan(README)
    commands = "\n".join(step.block.text for step in found)
    for needed in COVERED:
        assert needed in commands, f"no README block runs {needed!r}"
    assert [step.block.kind for step in found].count("background") >= 1
    for step in found[1:]:
        assert step.expected, f"README line {step.block.line}: show what this prints"


def test_the_readme_is_a_front_door() -> None:
    """Short, and the two commands first."""
    text = README.read_text()
    assert len(text.splitlines()) <= README_LINES
    first = next(block for block in blocks(text))
    assert first.text.splitlines()[0].startswith("make run")
    assert first.text.splitlines()[1].startswith("make test")


def test_one_tenant_throughout() -> None:
    """The README's tokens, the banner's token and the viewer text name the same tenant."""
    text = README.read_text()
    commands = "\n".join(step.block.text for step in plan(README))
    assert set(re.findall(r"--tenant (\S+)", commands)) == {DEV_TENANT}
    assert f"tenant `{DEV_TENANT}`" in text.split("## A first stream")[0]
    assert "tenants keep runs apart" in text


@pytest.mark.parametrize("document", DOCUMENTS, ids=name)
def test_skips_are_rare_and_say_why(document: Path) -> None:
    found = blocks(document.read_text())
    skipped = [block for block in found if block.kind == "skip"]
    runnable = [block for block in found if block.kind in ("run", "background")]
    assert len(skipped) <= max(1, len(runnable) // 4), (
        f"{name(document)}: {len(skipped)} blocks skipped, {len(runnable)} run")


@pytest.mark.parametrize("document", DOCUMENTS, ids=name)
def test_every_wire_shape_is_json(document: Path) -> None:
    for block in blocks(document.read_text()):
        if block.kind == "json":
            try:
                json.loads(block.text)
            except ValueError as error:
                pytest.fail(f"{name(document)} line {block.line}: not JSON ({error})")


@pytest.mark.parametrize("document", DOCUMENTS, ids=name)
def test_every_block_runs_as_written(document: Path, make_run: MakeRun,
                                     tmp_path: Path) -> None:
    assert RUNNEL.is_file(), f"{RUNNEL} is missing: the documents' commands need `make install`"
    found = plan(document)
    if not found:
        return
    at_server = [replace(step, block=replace(
        step.block, text=step.block.text.replace(DOCUMENTED_URL, make_run.url)))
        for step in found]
    outputs, progress = tmp_path / "outputs", tmp_path / "progress"
    outputs.mkdir()
    (tmp_path / ".curlrc").write_text("fail-with-body\nshow-error\n")
    environment = without_runnel_variables(RUNNEL_DATA_DIR=str(make_run.data_dir),
                                           CURL_HOME=str(tmp_path))
    if document != README:
        environment |= {"RUNNEL_URL": make_run.url, "RUNNEL_TOKEN": dev_token(make_run)}
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
        where = f"the block at {name(document)} line {step.block.line}" if step else reached
        shown = (outputs / reached).read_text() if reached.isdigit() else ""
        pytest.fail(f"{where} failed (status {process.returncode}):\n{shown}\n{printed}\n"
                    f"server output:\n{make_run.printed()[-3000:]}")
    for number, step in enumerate(found):
        output = (outputs / str(number)).read_text()
        for expected in step.expected:
            assert shows(expected.text, output), (
                f"{name(document)} line {expected.line} shows\n{expected.text}\nbut the "
                f"block at line {step.block.line} printed\n{output}")


def dev_token(make_run: MakeRun) -> str:
    """What the README's first block mints: tenant `dev`, read and write."""
    minted = subprocess.run(
        [str(RUNNEL), "token", "--tenant", DEV_TENANT, "--sub", "alice", "--scopes",
         "streams:read,streams:write"], cwd=REPO, capture_output=True, text=True, check=True,
        env=without_runnel_variables(RUNNEL_DATA_DIR=str(make_run.data_dir)))
    return minted.stdout.strip()
