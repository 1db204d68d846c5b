"""The README's marked blocks, and the bash script that runs them (ADR 0036).

A marker is an HTML comment (invisible on GitHub) on the line before a fenced block:
- `<!-- readme-test: run -->`: a shell block run in one bash session, in README order,
  from the checkout's root; its variables carry over to the blocks after it;
- `<!-- readme-test: background -->`: a shell block that blocks (a subscription), started
  in the background at that point; it must end, with status 0, before the script does;
- `<!-- readme-test: output -->`: what the last run or background block prints. Each of
  its lines must match a line of that output, in order; `…` matches anything;
- `<!-- readme-test: background output -->`: the same for the last background block, shown
  where the README tells what it printed (after the blocks that made it end).
Any other block is prose for the reader and is not run.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

MARKER = re.compile(r"^<!-- readme-test: (run|background|output|background output) -->$")
FENCE = "```"


@dataclass(frozen=True)
class Block:
    kind: str
    """`run`, `background`, `output` or `background output`."""
    text: str
    line: int
    """Where the block's fence opens in the README (1-based)."""


@dataclass(frozen=True)
class Step:
    """A command block and the outputs the README shows for it."""

    block: Block
    expected: tuple[Block, ...]


def marked_blocks(markdown: str) -> list[Block]:
    blocks: list[Block] = []
    lines = markdown.splitlines()
    index = 0
    while index < len(lines):
        marker = MARKER.match(lines[index].strip())
        index += 1
        if marker is None:
            continue
        if index >= len(lines) or not lines[index].startswith(FENCE):
            raise ValueError(f"README line {index}: a marker must sit just above a fence")
        opened = index + 1
        end = next((at for at in range(index + 1, len(lines))
                    if lines[at].startswith(FENCE)), None)
        if end is None:
            raise ValueError(f"README line {opened}: the fenced block never closes")
        blocks.append(Block(marker.group(1), "\n".join(lines[index + 1:end]), opened))
        index = end + 1
    return blocks


def steps(blocks: list[Block]) -> list[Step]:
    found: list[Step] = []
    for block in blocks:
        if block.kind in ("run", "background"):
            found.append(Step(block, ()))
            continue
        kinds = ("background",) if block.kind == "background output" else ("run", "background")
        owner = next((at for at in reversed(range(len(found)))
                      if found[at].block.kind in kinds), None)
        if owner is None:
            raise ValueError(f"README line {block.line}: an output block before its command")
        found[owner] = Step(found[owner].block, (*found[owner].expected, block))
    return found


def script(plan: list[Step], outputs: Path, progress: Path) -> str:
    """Bash that runs every step in order, each step's output (stdout and stderr) in
    `outputs/<n>`, and writes the number of the step it starts to `progress`."""
    lines = ["set -euo pipefail", "background=()"]
    for number, step in enumerate(plan):
        out = shlex.quote(str(outputs / str(number)))
        lines.append(f"echo {number} > {shlex.quote(str(progress))}")
        lines += ["{", step.block.text, ""]
        if step.block.kind == "background":
            lines += [f"}} > {out} 2>&1 &", "background+=($!)"]
        else:
            lines.append(f"}} > {out} 2>&1")
    lines.append('for pid in "${background[@]}"; do wait "$pid"; done')
    lines.append(f"echo done > {shlex.quote(str(progress))}")
    return "\n".join(lines) + "\n"


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
