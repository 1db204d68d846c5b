"""The blocks of the README and of `docs/*.md`, and the bash script that runs a document's
runnable blocks (ADR 0036).

Rules:
- every fenced block tagged `sh`, `bash`, `shell`, `python` or `ts` runs, as written, unless the
  line above its fence is `<!-- readme-test: skip: WHY -->` (a command for another
  machine, or `make run` itself, which the test has started already). Keep those rare;
- a document's blocks run in order, in one bash session, from the checkout's root: a
  shell block's variables carry over to the blocks after it; a python block runs at its
  place in that order as a script of its own (`.venv/bin/python`), with the variables
  the session exported; a `ts` block likewise, bundled by the TypeScript SDK's esbuild
  with `@runnel/client` taken from `sdk/typescript/src` and run by `node`;
- `<!-- readme-test: background -->` above a runnable block: it blocks (a subscription)
  and starts in the background at that point; it must end, with status 0, before the
  document's script does;
- `<!-- readme-test: output -->` above a block (tagged `text`, usually): what the last
  block that ran printed. Each of its lines must match a line of that output, in order;
  `…` matches anything. `<!-- readme-test: background output -->`: the same for the
  last background block, shown where the document tells what it printed;
- a `json` block is a wire shape: it must parse as JSON;
- any other block (`text`, `html`, `ini`, …) is for the reader and is not run.
Fences open and close at the start of a line (not indented in a list).
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

MARKER = re.compile(r"^<!-- readme-test: (background|output|background output|skip: .+) -->$")
FENCE = "```"
SHELL = frozenset({"sh", "bash", "shell"})
TYPESCRIPT = frozenset({"ts", "typescript"})
RUNNABLE = SHELL | TYPESCRIPT | {"python"}
PYTHON = ".venv/bin/python"
PYTHON_END = "RUNNEL_DOCS_PYTHON_BLOCK"
ESBUILD = ("sdk/typescript/node_modules/.bin/esbuild --bundle --platform=node --format=esm "
           "--log-level=warning --alias:@runnel/client=./sdk/typescript/src/index.ts")


@dataclass(frozen=True)
class Block:
    kind: str
    """`run`, `background`, `output`, `background output`, `skip`, `json` or `prose`."""
    language: str
    text: str
    line: int
    """Where the block's fence opens in the document (1-based)."""


@dataclass(frozen=True)
class Step:
    """A block that runs and the outputs the document shows for it."""

    block: Block
    expected: tuple[Block, ...]


def blocks(markdown: str) -> list[Block]:
    """Every fenced block of the document, with what its marker (or its tag) makes it."""
    found: list[Block] = []
    lines = markdown.splitlines()
    index = 0
    while index < len(lines):
        if not lines[index].startswith(FENCE):
            marker = MARKER.match(lines[index].strip())
            if marker is not None and (index + 1 >= len(lines)
                                       or not lines[index + 1].startswith(FENCE)):
                raise ValueError(f"line {index + 1}: a marker must sit just above a fence")
            index += 1
            continue
        opened = index + 1
        end = next((at for at in range(index + 1, len(lines))
                    if lines[at].startswith(FENCE)), None)
        if end is None:
            raise ValueError(f"line {opened}: the fenced block never closes")
        language = lines[index].removeprefix(FENCE).strip()
        marker = MARKER.match(lines[index - 1].strip()) if index > 0 else None
        found.append(Block(_kind(marker.group(1) if marker else None, language), language,
                           "\n".join(lines[index + 1:end]), opened))
        index = end + 1
    return found


def _kind(marker: str | None, language: str) -> str:
    if marker is not None:
        if marker == "background" and language not in RUNNABLE:
            raise ValueError(f"a {language or 'plain'} block cannot run in the background")
        return "skip" if marker.startswith("skip: ") else marker
    if language in RUNNABLE:
        return "run"
    return "json" if language == "json" else "prose"


def steps(found: list[Block]) -> list[Step]:
    plan: list[Step] = []
    for block in found:
        if block.kind in ("run", "background"):
            plan.append(Step(block, ()))
            continue
        if block.kind not in ("output", "background output"):
            continue
        kinds = ("background",) if block.kind == "background output" else ("run", "background")
        owner = next((at for at in reversed(range(len(plan)))
                      if plan[at].block.kind in kinds), None)
        if owner is None:
            raise ValueError(f"line {block.line}: an output block before its command")
        plan[owner] = Step(plan[owner].block, (*plan[owner].expected, block))
    return plan


def script(plan: list[Step], outputs: Path, progress: Path) -> str:
    """Bash that runs every step in order, each step's output (stdout and stderr) in
    `outputs/<n>`, and writes the number of the step it starts to `progress`."""
    lines = ["set -euo pipefail", "background=()"]
    for number, step in enumerate(plan):
        out = shlex.quote(str(outputs / str(number)))
        lines.append(f"echo {number} > {shlex.quote(str(progress))}")
        lines += ["{", *_command(step.block), ""]
        if step.block.kind == "background":
            lines += [f"}} > {out} 2>&1 &", "background+=($!)"]
        else:
            lines.append(f"}} > {out} 2>&1")
    lines.append('for pid in "${background[@]}"; do wait "$pid"; done')
    lines.append(f"echo done > {shlex.quote(str(progress))}")
    return "\n".join(lines) + "\n"


def _command(block: Block) -> list[str]:
    if block.language in SHELL:
        return [block.text]
    if PYTHON_END in block.text:
        raise ValueError(f"line {block.line}: the block holds {PYTHON_END}")
    if block.language in TYPESCRIPT:
        return ['ts_dir=$(mktemp -d)', f"cat > \"$ts_dir/block.ts\" <<'{PYTHON_END}'",
                block.text, PYTHON_END,
                f'{ESBUILD} "$ts_dir/block.ts" --outfile="$ts_dir/block.mjs"',
                'node "$ts_dir/block.mjs"']
    return [f"{PYTHON} - <<'{PYTHON_END}'", block.text, PYTHON_END]


def shows(expected: str, output: str) -> bool:
    """Every non-empty line of `expected` matches a line of `output`, in order."""
    patterns = [re.compile(".*".join(re.escape(part) for part in line.split("…")))
                for line in expected.splitlines() if line.strip()]
    lines = output.splitlines()
    at = 0
    for pattern in patterns:
        while at < len(lines) and pattern.fullmatch(lines[at]) is None:
            at += 1
        if at == len(lines):
            return False
        at += 1
    return True
