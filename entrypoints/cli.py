"""The `runnel` command."""

from __future__ import annotations

import argparse
import sys
from importlib.metadata import version


def _version(_: argparse.Namespace) -> int:
    print(version("runnel"))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="runnel", description="Durable work-data streams for workflow runs.")
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("version", help="print the installed version").set_defaults(
        handler=_version)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return int(args.handler(args))


if __name__ == "__main__":
    sys.exit(main())
