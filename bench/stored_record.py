"""What one `StoredRecord` costs on the append path, beside the constructor it replaced.

Prints figures; never passes or fails. `from_draft` fills the record's instance dict in
one step; the baseline is the frozen dataclass's own `__init__` with the same fields (what
`from_draft` called before), timed in the same run. A few seconds.

    .venv/bin/python -m bench.stored_record [--number 200000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import timeit
from datetime import UTC, datetime

from application.ports.records import StoredRecord
from domain.records import Draft


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--number", type=int, default=200_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    draft = Draft(content_type="application/json", size=7, payload={"n": 1}, has_payload=True,
                  payload_json='{"n":1}', idempotency_key="k-1")
    at = datetime.now(UTC)

    def constructor() -> StoredRecord:
        return StoredRecord(sequence=1, content_type=draft.content_type, appended_at=at,
                            size=draft.size, payload_json=draft.payload_json, data=draft.data,
                            object=draft.object, idempotency_key=draft.idempotency_key,
                            offset=7)

    def from_draft() -> StoredRecord:
        return StoredRecord.from_draft(1, draft, at, 7)

    assert constructor() == from_draft()
    for label, made in (("frozen __init__ (baseline)", constructor), ("from_draft", from_draft)):
        best = min(timeit.repeat(made, number=args.number, repeat=args.repeat))
        print(f"{label:28} {best / args.number * 1e6:6.3f} µs a record")


if __name__ == "__main__":
    main()
