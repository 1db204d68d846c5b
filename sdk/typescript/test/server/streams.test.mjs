// The stream handle against a real server: create, append with idempotency keys, read in
// pages, ack, close, and the errors a caller acts on.
import assert from "node:assert/strict";
import { test } from "node:test";

import { RunnelError } from "../../dist/index.js";
import { client, runId } from "../support/server.mjs";

test("create, then an identical re-create; another definition is a conflict", async () => {
  const stream = client().stream(runId(), "answer");
  const created = await stream.create({ content_class: "output.text", consumers: ["ui"] });
  assert.equal(created.stream_id, "answer");
  assert.deepEqual(created.status.consumers, { ui: 0 });
  assert.deepEqual((await stream.create({ content_class: "output.text", consumers: ["ui"] })).definition,
                   created.definition);
  await assert.rejects(stream.create({ content_class: "output.other" }),
                       (error) => error instanceof RunnelError && error.status === 409 && error.code === "definition_conflict");
});

test("a used idempotency key answers its original sequence and stores nothing", async () => {
  const stream = client().stream(runId(), "s");
  await stream.create({ content_class: "output.text" });
  assert.deepEqual((await stream.append([{ payload: "a", idempotency_key: "k1" }, { payload: "b" }])).sequences, [1, 2]);
  const again = await stream.append([{ payload: "other", idempotency_key: "k1" }, { payload: "c", idempotency_key: "k2" }]);
  assert.deepEqual([again.sequences, again.head, again.duplicates], [[1, 3], 3, [0]]);
  const page = await stream.read();
  assert.deepEqual(page.records.map((record) => [record.sequence, record.payload, record.idempotency_key ?? null]),
                   [[1, "a", "k1"], [2, "b", null], [3, "c", "k2"]]);
});

test("pages read on from next_cursor, ascending and dense, to the head", async () => {
  const stream = client().stream(runId(), "s");
  await stream.create({ content_class: "output.text" });
  await stream.append(Array.from({ length: 7 }, (_, n) => ({ payload: n + 1 })));
  const seen = [];
  let cursor = 0;
  for (;;) {
    const page = await stream.read({ after: cursor, limit: 3 });
    if (page.records.length === 0) break;
    seen.push(page.records.map((record) => record.payload));
    assert.equal(page.head, 7);
    cursor = page.next_cursor;
  }
  assert.deepEqual(seen, [[1, 2, 3], [4, 5, 6], [7]]);
  await assert.rejects(stream.read({ after: 8 }), (error) => error.code === "future_cursor");
});

test("acks only advance; close is idempotent and refuses later appends", async () => {
  const stream = client().stream(runId(), "s");
  await stream.create({ content_class: "output.text", consumers: ["ui"] });
  await stream.append([{ payload: 1 }, { payload: 2 }]);
  assert.deepEqual(await stream.ack("ui", 2), { consumer_id: "ui", acked: 2 });
  await assert.rejects(stream.ack("ui", 1), (error) => error.status === 409 && error.code === "ack_regression");
  await assert.rejects(stream.ack("nobody", 1), (error) => error.status === 404 && error.code === "consumer_not_found");
  assert.deepEqual(await stream.close(), { closed: true, head: 2 });
  assert.deepEqual(await stream.close(), { closed: true, head: 2 });
  await assert.rejects(stream.append([{ payload: 3 }]), (error) => error.status === 409 && error.code === "stream_closed");
  assert.equal((await stream.info()).status.consumers.ui, 2);
});

test("objects: prepare, upload and commit once however often; the body comes back checked", async () => {
  const stream = client().stream(runId(), "files");
  await stream.create({ content_class: "output.file" });
  const body = new TextEncoder().encode("%PDF-1.7 a small report\n".repeat(1000));
  const stored = await stream.uploadObject(body, { contentType: "application/pdf" });
  assert.equal(stored.sequence, 1);
  assert.deepEqual([stored.object.size, stored.object.content_type], [body.length, "application/pdf"]);
  const repeated = await stream.uploadObject(new Blob([body]), { contentType: "application/pdf" });
  assert.deepEqual([repeated.sequence, repeated.object.object_id], [1, stored.object.object_id]);
  assert.deepEqual(await stream.downloadObject(stored), body);
  assert.deepEqual(await stream.downloadObject(stored.object.object_id), body);
  assert.equal((await stream.getObject(stored.object.object_id)).state, "committed");
  assert.equal((await stream.info()).status.head, 1);
});
