"""`runnel deliveries redrive --run R --stream S [--sequence N …]`: put an input stream's dead
letters back in line (ADR 0057).

It goes through the HTTP API, like `runnel tail`, with a token of the stream's tenant that
holds `streams:admin`: the server checks the scope and the tenant, re-drives at the
stream's home, and records the re-drive under the token's subject in the deliveries view.
It prints what was re-driven and what was not, and exits 0 when the server answered (even
if nothing was dead), 1 when it refused, 2 on a usage error.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING, Any, TextIO
from urllib.parse import quote

from application.redrive import MAX_REDRIVE_SEQUENCES
from application.views import API_PREFIX

if TYPE_CHECKING:
    import httpx

PREFIX = "runnel deliveries redrive"
TIMEOUT_SECONDS = 30.0


def add_deliveries_command(commands: Any) -> None:
    """Register `deliveries redrive` on the `runnel` command's subparsers."""
    deliveries = commands.add_parser("deliveries", help="act on an input stream's deliveries")
    actions = deliveries.add_subparsers(dest="action", required=True)
    redrive = actions.add_parser(
        "redrive", help="put dead letters back in line (needs a streams:admin token)")
    redrive.add_argument("--run", required=True, help="the run id")
    redrive.add_argument("--stream", required=True, help="the input stream's id")
    redrive.add_argument("--sequence", type=_sequence, action="append", dest="sequences",
                         metavar="N", help="a dead letter to re-drive (repeatable; default: "
                                           f"the stream's lowest {MAX_REDRIVE_SEQUENCES})")
    redrive.add_argument("--url", default=os.environ.get("RUNNEL_URL", "http://127.0.0.1:8080"),
                         help="the server's base URL (default: $RUNNEL_URL, else "
                              "http://127.0.0.1:8080)")
    redrive.add_argument("--token", default=os.environ.get("RUNNEL_TOKEN"),
                         help="bearer token with streams:admin (default: $RUNNEL_TOKEN)")
    redrive.set_defaults(handler=_redrive)


def _sequence(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a sequence number") from None
    if value < 1:
        raise argparse.ArgumentTypeError("a sequence is at least 1")
    return value


def _redrive(args: argparse.Namespace) -> int:
    if not args.token:
        print(f"{PREFIX}: no token (--token or RUNNEL_TOKEN)", file=sys.stderr)
        return 2
    if args.sequences is not None and len(set(args.sequences)) > MAX_REDRIVE_SEQUENCES:
        print(f"{PREFIX}: at most {MAX_REDRIVE_SEQUENCES} sequences at once", file=sys.stderr)
        return 2
    return redrive(args.url, args.token, args.run, args.stream, args.sequences)


def redrive(url: str, token: str, run_id: str, stream_id: str, sequences: list[int] | None,
            out: TextIO | None = None, err: TextIO | None = None) -> int:
    import httpx  # only this command talks HTTP: the others start without it

    out = out or sys.stdout
    err = err or sys.stderr
    path = (f"{API_PREFIX}/runs/{quote(run_id, safe='')}/streams/"
            f"{quote(stream_id, safe='')}/deliveries/redrive")
    body = {"sequences": sorted(set(sequences))} if sequences else {}
    try:
        with httpx.Client(base_url=url, timeout=TIMEOUT_SECONDS) as client:
            response = client.post(path, json=body,
                                   headers={"Authorization": f"Bearer {token}"})
    except httpx.HTTPError as error:
        err.write(f"{PREFIX}: {url} did not answer: {error}\n")
        return 1
    if response.status_code != 200:
        err.write(f"{PREFIX}: {_refusal(response)}\n")
        return 1
    out.write(_summary(response.json()) + "\n")
    return 0


def _refusal(response: httpx.Response) -> str:
    try:
        problem = response.json()
        return f"{response.status_code} {problem['code']}: {problem['detail']}"
    except (ValueError, KeyError, TypeError):
        return f"{response.status_code} {response.reason_phrase}"


def _summary(report: dict[str, Any]) -> str:
    def listed(sequences: list[int]) -> str:
        return ", ".join(str(sequence) for sequence in sequences) or "none"

    lines = [f"run {report['run_id']} stream {report['stream_id']}: "
             f"re-driven {listed(report['redriven'])}"]
    if report["not_dead"]:
        lines.append(f"not dead letters (left alone): {listed(report['not_dead'])}")
    if report["not_retained"]:
        lines.append(f"pruned by retention (left dead): {listed(report['not_retained'])}")
    lines.append(f"dead letters left: {report['dead_letter_count']}")
    return "\n".join(lines)
