// The native stream lifecycle against a real server (ADR 0075, 0076): delete() and its
// tombstone, the expiry pin in a definition, and long-polled reads (`read({ wait })`).
import assert from "node:assert/strict";
import { test } from "node:test";

import { RunnelError } from "../../dist/index.js";
import { ADMIN_TOKEN, client, runId } from "../support/server.mjs";

const refusedWith = (status, code) => (error) =>
  error instanceof RunnelError && error.status === status && error.code === code;

test("delete() by a writer erases the stream, a repeat answers zero counts, the id is spent", async () => {
  assert.ok(ADMIN_TOKEN, "RUNNEL_ADMIN_TOKEN names an admin token");
  const run = runId();
  const stream = client().stream(run, "s");
  await stream.create({ content_class: "output.text" });
  await stream.append([{ payload: 1 }, { payload: 2 }]);
  assert.deepEqual(await stream.delete(), {
    run_id: run, stream_id: "s", deleted: true, records_deleted: 2, objects_deleted: 0 });
  const admin = client({ token: ADMIN_TOKEN }).stream(run, "s");
  const again = await admin.delete();
  assert.deepEqual([again.records_deleted, again.objects_deleted], [0, 0]);
  await assert.rejects(stream.info(), refusedWith(404, "not_found"));
  await assert.rejects(stream.read(), refusedWith(404, "not_found"));
  await assert.rejects(stream.create({ content_class: "output.text" }), refusedWith(409, "stream_deleted"));
});

test("the expiry pin is a definition field", async () => {
  const stream = client().stream(runId(), "s");
  const created = await stream.create({ content_class: "output.text", expires_after_seconds: 3600 });
  assert.equal(created.definition.expires_after_seconds, 3600);
});

test("read({ wait }) answers at once with records, else once one is appended", async () => {
  const stream = client().stream(runId(), "s");
  await stream.create({ content_class: "output.text" });
  await stream.append([{ payload: 1 }]);
  assert.deepEqual((await stream.read({ wait: 30 })).records.map((record) => record.payload), [1]);
  const idle = await stream.read({ after: 1, wait: 0.1 });
  assert.deepEqual([idle.records, idle.next_cursor, idle.closed], [[], 1, false]);
  let answered = false;
  const waiting = stream.read({ after: 1, wait: 30 }).finally(() => { answered = true; });
  // The first append may land before the read waits (it then answers at once): append until it answers.
  for (let n = 2; !answered; n += 1) {
    await stream.append([{ payload: n }]);
    await Promise.race([waiting, new Promise((resolve) => setTimeout(resolve, 200))]);
  }
  assert.equal((await waiting).records[0].sequence, 2);
  await assert.rejects(stream.read({ wait: 31 }), refusedWith(400, "invalid_wait"));
});
