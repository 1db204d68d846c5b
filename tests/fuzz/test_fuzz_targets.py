"""The short, reproducible atheris run of `make test` (ADR 0026): every parser target in one
libFuzzer process, a fixed seed and a fixed number of inputs. `make fuzz` runs each target
for long."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.fuzz.targets import TARGETS, base64_rule, every

RUNS = 60_000
ROOT = Path(__file__).parents[2]


def test_every_parser_target_survives_a_seeded_run(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "tests.fuzz.run", "all", f"-runs={RUNS}", "-seed=1",
         "-max_total_time=120", f"-artifact_prefix={tmp_path}/", "-print_final_stats=1"],
        cwd=ROOT, capture_output=True, text=True, timeout=300)
    crashes = sorted(p.name for p in tmp_path.iterdir())
    assert result.returncode == 0, f"{crashes}\n{result.stderr[-4000:]}"
    assert f"Done {RUNS} runs" in result.stderr


def test_the_targets_hold_on_known_inputs() -> None:
    """Inputs that once found something, or that pin a rule, replayed on every run."""
    for target in TARGETS.values():
        for raw in (b"", b"\x00", b"\xff" * 64, b'\x80{"records": [' + b"[" * 200, b"0" * 30):
            target(raw)
    every(bytes([2, 0x80]) + b'{"records": [{"payload": 1}]}')
    # Found by `make fuzz`: the decoder took excess padding the published pattern refuses.
    base64_rule(b"\x00" + b"G" * 28 + b"==")
    base64_rule(b"\x00GGGG==")
