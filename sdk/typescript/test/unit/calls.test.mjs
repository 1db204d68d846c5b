// Call plans without a server: backpressure retries, object pins and download checks,
// the producer's batching and retry rules.
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { test } from "node:test";

import { checkInline, KeyCounter, limitsFor } from "../../dist/batching.js";
import { append, deleteStream, downloadObject, read, uploadObject } from "../../dist/calls.js";
import { BackpressureError, RunnelError, TransportError } from "../../dist/errors.js";
import { RetryPolicy } from "../../dist/retrying.js";
import { answer, play } from "../support/script.mjs";

const sha256 = (data) => createHash("sha256").update(data).digest("hex");
const digests = (effect) => (effect.kind === "digest" ? sha256(effect.data) : undefined);

test("a 429 is sent again after its Retry-After, the same body, up to the retries; then thrown", () => {
  const bodies = [];
  const records = [{ payload: 1, idempotency_key: "k:0" }];
  const refusing = (effect) => {
    if (effect.kind === "send") {
      bodies.push(effect.json);
      return answer(429, { code: "backpressure" }, { "Retry-After": "3" });
    }
    return undefined;
  };
  const outcome = play(append("r", "s", records, 2), refusing);
  assert.ok(outcome.error instanceof BackpressureError);
  assert.equal(outcome.error.retryAfter, 3);
  assert.deepEqual(outcome.effects.filter((effect) => effect.kind === "sleep").map((effect) => effect.seconds), [3, 3]);
  assert.deepEqual(bodies, [{ records }, { records }, { records }]);
});

test("an upload pins size and digest, derives the Python SDK's key, and skips an uploaded body", () => {
  const data = new TextEncoder().encode("a body");
  const sent = [];
  const server = (effect) => {
    if (effect.kind !== "send") return digests(effect);
    sent.push(`${effect.method} ${effect.path.split("/streams/s")[1]}`);
    if (effect.path.endsWith("/objects")) {
      sent.push(effect.json);
      return answer(200, { object_id: "o1", state: "uploaded" });
    }
    if (effect.path.endsWith("/commit")) return answer(200, { sequence: 7, state: "committed" });
    return answer(200, { records: [{ sequence: 7, content_type: "text/plain", appended_at: "t" }],
                         next_cursor: 7, head: 7, earliest: 1, closed: false });
  };
  const outcome = play(uploadObject("r", "s", data, { contentType: "text/plain" }), server);
  assert.equal(outcome.error, null);
  assert.equal(outcome.value.sequence, 7);
  const key = `object:${sha256(`${sha256(data)}:${data.length}:text/plain`).slice(0, 40)}`;
  assert.deepEqual(sent, ["POST /objects", { idempotency_key: key, sha256: sha256(data), size: 6, content_type: "text/plain" },
                          "POST /objects/o1/commit", "GET /records"]);
});

test("a download that does not match its pins is refused", () => {
  const target = { sequence: 1, content_type: "x", appended_at: "t",
                   object: { object_id: "o1", size: 3, sha256: sha256("abc"), content_type: "x", href: "" } };
  const serving = (body) => (effect) => (effect.kind === "send" ? answer(200, body) : digests(effect));
  assert.equal(new TextDecoder().decode(play(downloadObject("r", "s", target), serving("abc")).value), "abc");
  const changed = play(downloadObject("r", "s", target), serving("abd"));
  assert.ok(changed.error instanceof RunnelError);
  assert.equal(changed.error.code, "download_mismatch");
});

test("retries: 429, 5xx and transport errors, waiting at least Retry-After; other refusals never", () => {
  const policy = new RetryPolicy({ baseSeconds: 0.2, maxSeconds: 10 });
  const refusal = (status, retryAfter = null) => Object.assign(new RunnelError(status, "x", {}), { retryAfter });
  assert.deepEqual([refusal(429), refusal(503), new TransportError("cut"), refusal(409), refusal(422)]
    .map((error) => policy.retryable(error)), [true, true, true, false, false]);
  assert.equal(policy.delay(1, refusal(429, 4), (low) => low), 4);
  assert.equal(policy.delay(3, new TransportError("cut"), (low, high) => high), 0.8);
  assert.equal(policy.delay(20, new TransportError("cut"), (low, high) => high), 10);
});

test("keys, sizes and a stream's batch limits", () => {
  const keys = new KeyCounter("job-42/answer", 5);
  assert.deepEqual([keys.take(), keys.take()], ["job-42/answer:5", "job-42/answer:6"]);
  assert.throws(() => checkInline({ payload: "x".repeat(64 * 1024) }), (error) => error.code === "too_large");
  checkInline({ payload: "x".repeat(64 * 1024 - 2) }); // its JSON, quotes included, is 64 KiB
  assert.deepEqual(limitsFor({ content_class: "c", consumers: ["ui"], credit: { max_unread_items: 2 } }),
                   { maxRecords: 2, maxBytes: 4 * 1024 * 1024 });
  assert.deepEqual(limitsFor({ content_class: "c", credit: { max_unread_items: 2 } }),
                   { maxRecords: 1000, maxBytes: 4 * 1024 * 1024 });
});

test("a long-polled read asks the server to wait and gives the request that much longer", () => {
  const sent = [];
  const server = (effect) => {
    sent.push(effect);
    return answer(200, { records: [], next_cursor: 3, head: 3, earliest: 1, closed: false });
  };
  play(read("r", "s", 3, 10, 2.5), server);
  play(read("r", "s", 3, 10), server);
  assert.deepEqual(sent.map((effect) => [effect.query, effect.waits]),
                   [[{ after: 3, limit: 10, wait: 2.5 }, 2.5], [{ after: 3, limit: 10 }, 0]]);
});

test("deleteStream sends a DELETE of the stream", () => {
  const sent = [];
  play(deleteStream("r", "s"), (effect) => {
    sent.push(`${effect.method} ${effect.path}`);
    return answer(200, { deleted: true });
  });
  assert.deepEqual(sent, ["DELETE /api/workflow-streams/runs/r/streams/s"]);
});
