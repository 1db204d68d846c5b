"""S3 faults under load (fault 7): resets, stalls and 500s between Runnel and
S3, while object producers prepare, upload and commit and the usual load appends.

S3 is moto over HTTP behind `S3FaultProxy`; the node runs its workers, with an orphan
sweep every half second and a short grace. What must hold, checked after the faults:
every committed record's body is there and is its body (no commit without its body,
none deleted while referenced), commits are neither lost nor duplicated (the checker),
the bodies of live intents stay, and the orphan sweep removes the unreferenced bodies
past grace and nothing that is not Runnel's.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from botocore.exceptions import ClientError

from tests.chaos.checker import check
from tests.chaos.load import Load
from tests.chaos.object_load import ObjectLoad, Uploaded, body_of
from tests.chaos.s3_proxy import FAULTS as FAULTS_INJECTED
from tests.chaos.s3_proxy import FaultRates, S3FaultProxy
from tests.chaos.test_faults import ENV, SECONDS, _report, database
from tests.http.server import RunnelServer, token
from tests.pg import pg_template
from tests.s3 import moto_s3_server

__all__ = ["database", "pg_template"]

pytestmark = pytest.mark.postgres

GRACE_SECONDS = 1
FAULTS = FaultRates(reset=0.1, stall=0.02, error=0.1, lost_answer=0.1, bad_keys=0.3)
DEADLINE = 90.0


def _key(uploaded: Uploaded, load: ObjectLoad) -> str:
    """The server-owned key (`tenant/run/stream/object-id`)."""
    return f"{load.tenant}/{load.run}/{load.stream}/{uploaded.object_id}"


def _exists(client: Any, bucket: str, key: str) -> bool:
    try:
        client.head_object(Bucket=bucket, Key=key)
    except ClientError as error:
        if error.response["Error"]["Code"] in ("404", "NoSuchKey", "NotFound"):
            return False
        raise
    return True


async def _final(objects: ObjectLoad) -> dict[str, Any]:
    """The authoritative read of the object stream, records named by their object's key."""
    keys = {u.object_id: u.key for u in (*objects.committed.values(), *objects.live,
                                         *objects.aborted)}
    records: list[dict[str, Any]] = []
    async with objects.client() as client:
        while True:
            page = (await client.get(objects.path + "/records",
                                     params={"after": len(records), "limit": 1000})).json()
            for record in page["records"]:
                reference = record["object"]
                download = await client.get(objects.node.split("/api/")[0] + reference["href"])
                key = keys.get(reference["object_id"], "unknown:" + reference["object_id"])
                intact = (download.status_code == 200
                          and download.content == body_of(key)
                          and hashlib.sha256(download.content).hexdigest()
                          == reference["sha256"])
                # A body that is not its record's stands for a record stored without it.
                records.append({"sequence": record["sequence"],
                                "key": key if intact else f"missing-body:{key}",
                                "data_tenant": objects.tenant})
            if not page["records"] or page["next_cursor"] >= page["head"]:
                return {"kind": "final", "tenant": objects.tenant, "stream": objects.stream,
                        "head": page["head"], "records": records}


async def test_s3_resets_stalls_and_500s_lose_no_body(database: str, tmp_path: Path) -> None:
    s3 = moto_s3_server()
    bucket = s3.new_bucket("chaos")
    direct = s3.client()
    proxy = S3FaultProxy(s3.endpoint_url, stall_seconds=2)
    env = {**ENV, "RUNNEL_DATABASE_URL": database, "RUNNEL_OBJECT_STORE": "s3",
           "RUNNEL_S3_REGIONS": json.dumps({"local": {
               "bucket": bucket, "endpoint_url": proxy.start(), "access_key": s3.access_key,
               "secret_key": s3.secret_key, "region_name": s3.region_name,
               "addressing_style": "path"}}),
           # Botocore's own retries (5 attempts, up to about 15 s) would hide most faults
           # from Runnel; with 2 the failures reach it within the short fault window.
           "AWS_MAX_ATTEMPTS": "2", "AWS_RETRY_MODE": "standard",
           "RUNNEL_SWEEP_SECONDS": "0.5", "RUNNEL_ORPHAN_SWEEP_SECONDS": "0.5",
           "RUNNEL_ORPHAN_GRACE_SECONDS": str(GRACE_SECONDS)}
    # Bodies no intent owns, left by a crash long ago; and a key that is not Runnel's.
    orphans = [f"acme/chaos/objs/{uuid.uuid4()}" for _ in range(3)]
    foreign = "backups/not-runnel.txt"
    for key in (*orphans, foreign):
        direct.put_object(Bucket=bucket, Key=key, Body=b"old")
    server = RunnelServer.start(env, tmp_path / "node", workers=True)
    producers: list[asyncio.Task[None]] = []
    try:
        load = Load([server.api], token("acme"), "acme")
        objects = ObjectLoad(server.api, token("acme"), "acme")
        await load.create()
        await objects.create()
        producers = [asyncio.create_task(objects.produce(n)) for n in range(objects.producers)]

        async def s3_faults() -> None:
            proxy.set(FAULTS)
            await asyncio.sleep(SECONDS)
            proxy.calm()

        anomalies = await load.run_for(SECONDS, s3_faults)
        objects.stop.set()
        await asyncio.wait_for(asyncio.gather(*producers), DEADLINE)
        final = await _final(objects)
        anomalies += check([*objects.history, final])

        began = time.monotonic()
        while any(_exists(direct, bucket, key) for key in orphans):
            assert time.monotonic() - began < DEADLINE, "the orphan sweep left orphans"
            await asyncio.sleep(0.2)
        swept = time.monotonic() - began
        await asyncio.sleep(2 * GRACE_SECONDS)  # more sweeps, every body now past grace
        kept = [u for u in (*objects.committed.values(), *objects.live)
                if not _exists(direct, bucket, _key(u, objects))]
        assert kept == [], f"bodies deleted while referenced: {kept}"
        assert _exists(direct, bucket, foreign)
        final_after_sweeps = await _final(objects)
        assert final_after_sweeps == final
    finally:
        for producer in producers:
            producer.cancel()
        server.stop()
        proxy.close()
    injected = ", ".join(f"{proxy.injected[kind]} {kind}" for kind in FAULTS_INJECTED)
    print(f"\nS3 faults injected: {injected}; {proxy.injected['forwarded']} forwarded; "
          f"{len(objects.committed)} objects committed, {len(objects.aborted)} aborted, "
          f"{len(objects.live)} left uploaded")
    assert len(objects.committed) > 0 and sum(proxy.injected[k] for k in FAULTS_INJECTED) > 0
    # The row counts the object commits with the appends, and their 5xx with the load's.
    load.tally.acked += objects.tally.acked
    load.tally.unknown += objects.tally.unknown
    load.tally.server_errors += objects.tally.server_errors
    _report("S3 resets, stalls and 500s (objects prepared, uploaded, committed)", load,
            anomalies, f"orphans swept {swept:.2f} s after")
