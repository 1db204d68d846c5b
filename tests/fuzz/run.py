"""Run one fuzz target under libFuzzer: `python -m tests.fuzz.run TARGET [libFuzzer flags]`.

`make fuzz` runs each target for a long time with a kept corpus; the pytest in
`test_fuzz_targets.py` runs each for a fixed number of inputs with a fixed seed.
"""

from __future__ import annotations

import sys

import atheris

from tests.fuzz.targets import TARGETS


def main(argv: list[str]) -> None:
    if len(argv) < 2 or argv[1] not in TARGETS:
        raise SystemExit(f"usage: python -m tests.fuzz.run {{{','.join(TARGETS)}}} [flags]")
    target = TARGETS[argv[1]]
    atheris.Setup([argv[0], *argv[2:]], target)
    atheris.Fuzz()


if __name__ == "__main__":
    main(sys.argv)
