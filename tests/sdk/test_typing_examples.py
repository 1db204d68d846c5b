"""`mypy --strict` on a 10-line follower and a 10-line producer, on the SDK itself, and on
typing mistakes it must catch (the overloads of `follow`, the typed read page)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).parent / "typing_examples"
SDK_ROOT = Path(__file__).parents[2] / "sdk" / "python"


def mypy(*targets: Path) -> tuple[int, str]:
    """Strict mypy with no project config, finding the SDK from its source tree."""
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", "--config-file=",
         "--python-version=3.11", str(SDK_ROOT / "runnel_client"), *map(str, targets)],
        capture_output=True, text=True, timeout=600, check=False,
        env={**os.environ, "MYPYPATH": str(SDK_ROOT)})
    return done.returncode, done.stdout + done.stderr


def test_the_examples_and_the_sdk_pass_strict_mypy_and_the_mistakes_do_not() -> None:
    status, output = mypy(HERE / "follower.py", HERE / "producer.py", HERE / "run_follower.py",
                          HERE / "wrong.py")
    errors = [line for line in output.splitlines() if ": error:" in line]
    assert status == 1, output
    assert {Path(line.split(":")[0]).name for line in errors} == {"wrong.py"}, output
    lines = sorted(int(re.split(r":", line)[1]) for line in errors)
    assert lines == [7, 9, 11, 12], output
    for name in ("follower.py", "producer.py"):
        assert len((HERE / name).read_text().splitlines()) <= 11
